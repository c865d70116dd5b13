-- +goose Up
-- An order's pay window as it was set, from the purchase (or its group's filling) to its
-- end; expires_at is the deadline in force, which MySQL outages extend (internal/outage).
-- NULL in rows written before: their window is created_at to expires_at.
ALTER TABLE orders ADD COLUMN window_starts_at DATETIME(3) NULL, ADD COLUMN window_ends_at DATETIME(3) NULL;

-- +goose Down
ALTER TABLE orders DROP COLUMN window_starts_at, DROP COLUMN window_ends_at;
