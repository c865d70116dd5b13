-- +goose Up
-- A buyer is the token's subject: any string of 1 to 255 bytes of UTF-8 without a
-- control character (internal/buyer; docs/internals.md, "Buyers and variants: how they
-- are kept"). orders.buyer names it, compared byte by byte as Redis compares it (no
-- collation folds letter case or ignores a trailing space); orders.user_id stays the
-- number of a decimal buyer and is NULL for any other. Every row written before names a
-- decimal buyer, its user_id.
ALTER TABLE orders ADD COLUMN buyer VARBINARY(255) NOT NULL DEFAULT '' AFTER user_id;
UPDATE orders SET buyer = CAST(user_id AS CHAR);
ALTER TABLE orders ALTER COLUMN buyer DROP DEFAULT,
    MODIFY COLUMN user_id BIGINT UNSIGNED NULL,
    DROP INDEX orders_by_user, ADD INDEX orders_by_user (buyer, created_at),
    DROP INDEX orders_holdings, ADD INDEX orders_holdings (activity_id, buyer, status, return_pending, quantity);

-- What each buyer holds in a sale, by buyer.
ALTER TABLE user_purchases ADD COLUMN buyer VARBINARY(255) NOT NULL DEFAULT '' AFTER activity_id;
UPDATE user_purchases SET buyer = CAST(user_id AS CHAR);
ALTER TABLE user_purchases ALTER COLUMN buyer DROP DEFAULT,
    DROP PRIMARY KEY, ADD PRIMARY KEY (activity_id, buyer), DROP COLUMN user_id;

-- +goose Down
-- Only for a database whose buyers are all decimal: the orders of any other have no
-- user_id, and the first statement refuses them.
ALTER TABLE orders MODIFY COLUMN user_id BIGINT UNSIGNED NOT NULL,
    DROP INDEX orders_holdings, ADD INDEX orders_holdings (activity_id, user_id, status, return_pending, quantity),
    DROP INDEX orders_by_user, ADD INDEX orders_by_user (user_id, created_at),
    DROP COLUMN buyer;

ALTER TABLE user_purchases ADD COLUMN user_id BIGINT UNSIGNED NOT NULL DEFAULT 0 AFTER activity_id;
UPDATE user_purchases SET user_id = CAST(buyer AS UNSIGNED);
ALTER TABLE user_purchases ALTER COLUMN user_id DROP DEFAULT,
    DROP PRIMARY KEY, ADD PRIMARY KEY (activity_id, user_id), DROP COLUMN buyer;
