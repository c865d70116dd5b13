-- +goose Up
-- The epoch of the sale's Redis state: every rebuild from MySQL raises it before it reads
-- MySQL, and writes it into the state it builds (internal/stock/rebuild.go). The
-- transaction that writes a worker's orders refuses those claimed in a state of an older
-- epoch: a rebuild that read MySQL without them may have replaced that state.
ALTER TABLE activities ADD COLUMN redis_epoch BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE activities DROP COLUMN redis_epoch;
