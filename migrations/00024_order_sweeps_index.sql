-- +goose Up
-- One index for the two sweeps of orders, where there were two: the returns' (store's
-- PendingReturns, return_pending) and the expiry's (DueOrders, status and expires_at),
-- so each new order writes one index entry less. A return_pending order is cancelled or
-- refunded (only those changes set it, and neither status changes again), so a created
-- order is never return_pending: the expiry reads the range (FALSE, 'created', up to
-- now) in expires_at order, the returns the range TRUE. Built online: orders stay
-- writable while the index is built. The version before reads its due orders without
-- the index until its workers are replaced (docs/deploying.md).
ALTER TABLE orders ADD INDEX orders_sweeps (return_pending, status, expires_at),
    DROP INDEX orders_return_pending, DROP INDEX orders_by_expiry,
    ALGORITHM = INPLACE, LOCK = NONE;

-- +goose Down
ALTER TABLE orders ADD INDEX orders_by_expiry (status, expires_at),
    ADD INDEX orders_return_pending (return_pending), DROP INDEX orders_sweeps,
    ALGORITHM = INPLACE, LOCK = NONE;
