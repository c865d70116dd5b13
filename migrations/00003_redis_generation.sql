-- +goose Up
-- The highest generation of the sale's Redis state a worker's claim reached before its
-- orders were written here (internal/stock/rebuild.go): a Redis whose generation is lower
-- lost writes MySQL saw, and the sale is rebuilt from MySQL.
ALTER TABLE activities ADD COLUMN redis_gen BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE activities DROP COLUMN redis_gen;
