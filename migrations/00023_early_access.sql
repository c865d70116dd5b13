-- +goose Up
-- Early access (internal/accesscode, docs/sales.md "Early access"): a sale may open to
-- the holders of its access codes early_access_seconds before starts_at (0: no window).
ALTER TABLE activities ADD COLUMN early_access_seconds INT NOT NULL DEFAULT 0;
-- An order bought in the early window, with a code.
ALTER TABLE orders ADD COLUMN early_access BOOLEAN NOT NULL DEFAULT FALSE;
-- A sale's access codes, compared by their bytes. MySQL is where a code exists or is
-- revoked; Redis, in the sale's slot, decides who owns it (the first buyer who presents
-- it), and the worker records that here (buyer, used_at) within a second. revoked_at:
-- revoked by the shop (a code revoked stays so, and is listed no more).
CREATE TABLE access_codes (
    activity_id BIGINT UNSIGNED NOT NULL,
    code        VARBINARY(64)   NOT NULL,
    buyer       VARBINARY(255)  NULL,
    used_at     DATETIME(3)     NULL,
    revoked_at  DATETIME(3)     NULL,
    created_at  DATETIME(3)     NOT NULL,
    PRIMARY KEY (activity_id, code)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- +goose Down
DROP TABLE access_codes;
ALTER TABLE orders DROP COLUMN early_access;
ALTER TABLE activities DROP COLUMN early_access_seconds;
