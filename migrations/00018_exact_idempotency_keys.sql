-- +goose Up
-- Idempotency-Keys are compared byte for byte, as Redis compares them: under the
-- table's default collation (utf8mb4_general_ci) a replay of `ABC` after the archive
-- found the order of `abc`. A key holds only A-Z, a-z, 0-9, _ and - (the API refuses
-- any other), so utf8mb4_bin's PAD SPACE never applies, and a change of collation alone
-- leaves the stored bytes as they are: MariaDB makes it without rewriting the table.
ALTER TABLE orders MODIFY idempotency_key VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL;

-- +goose Down
ALTER TABLE orders MODIFY idempotency_key VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci NULL;
