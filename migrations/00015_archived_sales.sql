-- +goose Up
-- A sale that is over leaves Redis (internal/sale/archive.go): archived_at is when MySQL
-- began to answer for it alone (no purchase, change or rebuild from then on), and
-- redis_removed_at when the last of its Redis keys was removed. The archive job finds
-- the sales to archive, and those whose removal stopped half-way, through
-- activities_to_archive: both have no redis_removed_at and an ends_at long past.
ALTER TABLE activities ADD COLUMN archived_at DATETIME(3) NULL,
    ADD COLUMN redis_removed_at DATETIME(3) NULL,
    ADD INDEX activities_to_archive (redis_removed_at, ends_at);

-- +goose Down
ALTER TABLE activities DROP INDEX activities_to_archive, DROP COLUMN redis_removed_at, DROP COLUMN archived_at;
