-- +goose Up
-- MySQL's own per-user rule (internal/store's holdings.go) checked by the row itself:
-- each addition of a worker's batch writes the limit and the cap on participations its
-- orders were accepted under (their highest, for a buyer of several orders in the
-- batch) beside the buyer's new totals, and the CHECKs refuse totals past them, so the
-- batch reads no row back to check. A return takes units back and leaves both as they
-- are. NULL and 0: none recorded yet, nothing checked (rows written before).
ALTER TABLE user_purchases
    ADD COLUMN units_limit       BIGINT NULL,
    ADD COLUMN participation_cap BIGINT NOT NULL DEFAULT 0,
    ADD CONSTRAINT user_purchases_within_limit CHECK (units_limit IS NULL OR units <= units_limit),
    ADD CONSTRAINT user_purchases_within_cap CHECK (participation_cap = 0 OR participations <= participation_cap);

-- +goose Down
ALTER TABLE user_purchases
    DROP CONSTRAINT user_purchases_within_limit,
    DROP CONSTRAINT user_purchases_within_cap,
    DROP COLUMN units_limit,
    DROP COLUMN participation_cap;
