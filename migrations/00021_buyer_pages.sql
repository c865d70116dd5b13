-- +goose Up
-- A buyer's page of a sale's orders (GET /api/v1/orders?activity_id=, store.SaleOrders)
-- reads a range of orders_holdings in id order: the id goes after the buyer. The index
-- keeps every column it had, so the holdings it covers (store.Holdings, a GROUP BY
-- buyer) read it as before. Built online: orders stay writable while it is rebuilt.
ALTER TABLE orders DROP INDEX orders_holdings,
    ADD INDEX orders_holdings (activity_id, buyer, id, status, return_pending, quantity),
    ALGORITHM = INPLACE, LOCK = NONE;

-- +goose Down
ALTER TABLE orders DROP INDEX orders_holdings,
    ADD INDEX orders_holdings (activity_id, buyer, status, return_pending, quantity),
    ALGORITHM = INPLACE, LOCK = NONE;
