-- +goose Up
-- A sale's stock and buyers may be split over stock_buckets Redis slots
-- (internal/stock/bucket.go). Each bucket has its own generation of Redis state
-- (internal/stock/rebuild.go): bucket 0's is activities.redis_gen, the others' are here,
-- raised by the worker in the transaction that writes the bucket's orders.
ALTER TABLE activities ADD COLUMN stock_buckets INT NOT NULL DEFAULT 1,
    ADD CONSTRAINT activities_stock_buckets CHECK (stock_buckets BETWEEN 1 AND 64);

CREATE TABLE activity_buckets (
    activity_id BIGINT UNSIGNED NOT NULL,
    bucket      INT             NOT NULL,
    redis_gen   BIGINT          NOT NULL,
    PRIMARY KEY (activity_id, bucket)
);

-- +goose Down
DROP TABLE activity_buckets;
ALTER TABLE activities DROP CONSTRAINT activities_stock_buckets, DROP COLUMN stock_buckets;
