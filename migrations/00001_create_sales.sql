-- +goose Up
-- A sale (group-buy activity). `sold` counts the units of its orders that are created or
-- paid in MySQL; the guarded UPDATE in the worker and the CHECK keep it within stock_total,
-- so MySQL refuses oversell even if Redis lost writes.
CREATE TABLE activities (
    id                 BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    name               VARCHAR(200)    NOT NULL,
    product_name       VARCHAR(200)    NOT NULL,
    price_cents        BIGINT          NOT NULL,
    stock_total        BIGINT          NOT NULL,
    sold               BIGINT          NOT NULL DEFAULT 0,
    per_user_limit     INT             NOT NULL,
    starts_at          DATETIME(3)     NOT NULL,
    ends_at            DATETIME(3)     NOT NULL,
    pay_window_seconds INT             NOT NULL,
    created_at         DATETIME(3)     NOT NULL,
    updated_at         DATETIME(3)     NOT NULL,
    PRIMARY KEY (id),
    CONSTRAINT activities_sold_in_stock CHECK (sold >= 0 AND sold <= stock_total)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Orders that reached MySQL. `queued` orders live in Redis until the worker writes them,
-- so status here is created, paid, cancelled or failed.
CREATE TABLE orders (
    id             VARCHAR(48)     NOT NULL,
    activity_id    BIGINT UNSIGNED NOT NULL,
    user_id        BIGINT UNSIGNED NOT NULL,
    quantity       INT             NOT NULL,
    amount_cents   BIGINT          NOT NULL,
    status         VARCHAR(16)     NOT NULL,
    failure_reason VARCHAR(255)    NULL,
    created_at     DATETIME(3)     NOT NULL,
    expires_at     DATETIME(3)     NOT NULL,
    paid_at        DATETIME(3)     NULL,
    cancelled_at   DATETIME(3)     NULL,
    persisted_at   DATETIME(3)     NOT NULL,
    PRIMARY KEY (id),
    KEY orders_by_user (user_id, created_at),
    KEY orders_by_activity (activity_id, status),
    KEY orders_by_expiry (status, expires_at),
    CONSTRAINT orders_status CHECK (status IN ('created', 'paid', 'cancelled', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- Units each user holds in a sale (orders created or paid), guarded against the
-- per-user limit in the same transaction that writes the orders.
CREATE TABLE user_purchases (
    activity_id BIGINT UNSIGNED NOT NULL,
    user_id     BIGINT UNSIGNED NOT NULL,
    units       BIGINT          NOT NULL,
    PRIMARY KEY (activity_id, user_id),
    CONSTRAINT user_purchases_units CHECK (units >= 0)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE user_purchases;
DROP TABLE orders;
DROP TABLE activities;
