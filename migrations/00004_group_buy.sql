-- +goose Up
-- Group-buy sales (kind 'group'): buyers open a group or take a seat in one; the group's
-- orders become payable (created) only when it fills within its window, and are
-- cancelled, units and participations returned, when it does not. Any sale may also cap
-- how many times one user takes part (per_user_participations, NULL for no cap).
ALTER TABLE activities
    ADD COLUMN kind                    VARCHAR(8) NOT NULL DEFAULT 'sale',
    ADD COLUMN group_size              INT        NULL,
    ADD COLUMN group_window_seconds    INT        NULL,
    ADD COLUMN per_user_participations INT        NULL,
    ADD CONSTRAINT activities_kind CHECK (kind IN ('sale', 'group'));

-- Participations count the orders a user holds in a sale (grouping, created or paid),
-- guarded against per_user_participations with the units.
ALTER TABLE user_purchases ADD COLUMN participations BIGINT NOT NULL DEFAULT 0,
    ADD CONSTRAINT user_purchases_participations CHECK (participations >= 0);

-- An order of a group waits in status grouping until the group completes.
ALTER TABLE orders
    ADD COLUMN group_id VARCHAR(48) NULL,
    DROP CONSTRAINT orders_status,
    ADD CONSTRAINT orders_status CHECK (status IN ('grouping', 'created', 'paid', 'cancelled', 'failed'));
CREATE INDEX orders_by_group ON orders (group_id, status);

-- A group as MySQL knows it: members counts its seats whose orders are stored (grouping,
-- created or paid); it never passes size. Redis decides when a group completes or
-- fails; MySQL follows: complete once all its seats are stored, failed by the worker's
-- job, which also cancels its orders.
CREATE TABLE sale_groups (
    id           VARCHAR(48)     NOT NULL,
    activity_id  BIGINT UNSIGNED NOT NULL,
    size         INT             NOT NULL,
    members      INT             NOT NULL DEFAULT 0,
    status       VARCHAR(16)     NOT NULL,
    expires_at   DATETIME(3)     NOT NULL,
    completed_at DATETIME(3)     NULL,
    failed_at    DATETIME(3)     NULL,
    created_at   DATETIME(3)     NOT NULL,
    PRIMARY KEY (id),
    KEY sale_groups_by_activity (activity_id, status),
    CONSTRAINT sale_groups_members CHECK (members >= 0 AND members <= size),
    CONSTRAINT sale_groups_status CHECK (status IN ('open', 'complete', 'failed'))
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE sale_groups;
DROP INDEX orders_by_group ON orders;
ALTER TABLE orders DROP CONSTRAINT orders_status, DROP COLUMN group_id,
    ADD CONSTRAINT orders_status CHECK (status IN ('created', 'paid', 'cancelled', 'failed'));
ALTER TABLE user_purchases DROP CONSTRAINT user_purchases_participations, DROP COLUMN participations;
ALTER TABLE activities DROP CONSTRAINT activities_kind, DROP COLUMN kind, DROP COLUMN group_size,
    DROP COLUMN group_window_seconds, DROP COLUMN per_user_participations;
