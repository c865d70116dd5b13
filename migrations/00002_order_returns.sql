-- +goose Up
-- A cancelled order's units go back to the Redis stock after the MySQL transaction that
-- cancelled it; return_pending marks the orders whose Redis return is not yet confirmed,
-- so a crash between the two is repaired by the worker.
ALTER TABLE orders ADD COLUMN return_pending BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX orders_return_pending ON orders (return_pending);

-- +goose Down
DROP INDEX orders_return_pending ON orders;
ALTER TABLE orders DROP COLUMN return_pending;
