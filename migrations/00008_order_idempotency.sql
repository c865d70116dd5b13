-- +goose Up
-- The Idempotency-Key that made an order, and what the key remembers of the request
-- (the quantity, and a seat's group): Redis keeps the key for 24 hours, and a rebuild
-- of a sale's Redis state from MySQL writes it back, so a replay after Redis lost the
-- sale gets its order, not a second one.
ALTER TABLE orders
    ADD COLUMN idempotency_key     VARCHAR(64) NULL,
    ADD COLUMN request_fingerprint VARCHAR(96) NULL;

-- +goose Down
ALTER TABLE orders DROP COLUMN idempotency_key, DROP COLUMN request_fingerprint;
