-- +goose Up
-- Events out (internal/outbox). A change of an order or a group writes one row of
-- outbox_events in its own transaction, with the body to POST. The worker fans each
-- event out to the endpoints subscribed then (one webhook_deliveries row each) and marks
-- it dispatched; a delivery is claimed with SELECT ... FOR UPDATE SKIP LOCKED when its
-- next_attempt_at is due and no earlier event of its subject (order or group) is still
-- pending for that endpoint.
CREATE TABLE webhooks (
    id              BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    url             VARCHAR(2048)   NOT NULL,
    events          VARCHAR(255)    NOT NULL, -- the event types, comma-separated
    secret          VARCHAR(100)    NOT NULL, -- whsec_ + base64 (Standard Webhooks)
    created_at      DATETIME(3)     NOT NULL,
    disabled_at     DATETIME(3)     NULL,     -- it answered 410 Gone
    disabled_reason VARCHAR(255)    NULL,
    deleted_at      DATETIME(3)     NULL,     -- its deliveries are pruned, then the row
    PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE outbox_events (
    seq        BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
    id         VARCHAR(32)     NOT NULL, -- evt_ + ULID: the webhook-id of every delivery
    type       VARCHAR(32)     NOT NULL,
    subject    VARCHAR(48)     NOT NULL, -- the order or group id
    body       TEXT            NOT NULL,
    created_at DATETIME(3)     NOT NULL,
    dispatched BOOLEAN         NOT NULL DEFAULT FALSE,
    PRIMARY KEY (seq),
    KEY outbox_events_undispatched (dispatched, seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

CREATE TABLE webhook_deliveries (
    webhook_id       BIGINT UNSIGNED NOT NULL,
    event_seq        BIGINT UNSIGNED NOT NULL,
    subject          VARCHAR(48)     NOT NULL,
    status           VARCHAR(16)     NOT NULL,
    attempts         INT             NOT NULL DEFAULT 0,
    next_attempt_at  DATETIME(3)     NULL,
    last_attempt_at  DATETIME(3)     NULL,
    last_status_code INT             NULL,
    last_error       VARCHAR(255)    NULL,
    delivered_at     DATETIME(3)     NULL,
    PRIMARY KEY (webhook_id, event_seq),
    KEY webhook_deliveries_due (status, next_attempt_at),
    KEY webhook_deliveries_by_subject (webhook_id, subject, status, event_seq),
    KEY webhook_deliveries_by_event (event_seq), -- pruning: is an event still named?
    CONSTRAINT webhook_deliveries_status CHECK (status IN ('pending', 'delivered', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE outbox_events;
DROP TABLE webhooks;
