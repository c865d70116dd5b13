-- +goose Up
-- A shop's money and back office.
-- paid_by: who confirmed the payment of a paid order: the shop's back end (service), an
-- admin, or the buyer's simulated payment (buyer); NULL on orders paid before it existed.
-- refunded: a final status, a paid order the shop refunded at refunded_at; restock says
-- whether its units went back on sale (NULL on other orders). A refunded order's units
-- and participation leave its buyer's user_purchases, and go back to Redis (the buyer's
-- holding, and with restock the stock) through return_pending, as a cancelled order's.
ALTER TABLE orders
    ADD COLUMN paid_by     VARCHAR(8)  NULL,
    ADD COLUMN refunded_at DATETIME(3) NULL,
    ADD COLUMN restock     BOOLEAN     NULL,
    DROP CONSTRAINT orders_status,
    ADD CONSTRAINT orders_status CHECK (status IN ('grouping', 'created', 'paid', 'cancelled', 'failed', 'refunded')),
    ADD CONSTRAINT orders_paid_by CHECK (paid_by IN ('service', 'admin', 'buyer'));

-- A sale's orders in id order, the back office's pages (GET /api/v1/orders?activity_id=):
-- a page is one range of this index. With a status, orders_by_activity (activity_id,
-- status, and the id InnoDB appends) is that range.
CREATE INDEX orders_by_sale ON orders (activity_id, id);

-- The shop's own reference of a sale (its product or SKU id), carried by every order
-- event of the sale, and a JSON object of the shop's, kept as sent (compacted).
ALTER TABLE activities
    ADD COLUMN external_ref VARCHAR(128)   NULL,
    ADD COLUMN metadata     VARBINARY(4096) NULL;

-- +goose Down
ALTER TABLE activities DROP COLUMN external_ref, DROP COLUMN metadata;
DROP INDEX orders_by_sale ON orders;
ALTER TABLE orders DROP CONSTRAINT orders_paid_by, DROP CONSTRAINT orders_status,
    DROP COLUMN paid_by, DROP COLUMN refunded_at, DROP COLUMN restock,
    ADD CONSTRAINT orders_status CHECK (status IN ('grouping', 'created', 'paid', 'cancelled', 'failed'));
