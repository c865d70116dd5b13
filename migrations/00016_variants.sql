-- +goose Up
-- A sale may sell one product in variants (sizes, colours), each with its own stock,
-- under the sale's one per-user limit (docs/internals.md, "Buyers and variants: how
-- they are kept"). idx is the variant's index, 0 up in the order the sale was created
-- with, by which Redis keeps it; a name is compared by its bytes, as the API compares
-- it. sold is the variant's share of activities.sold, under the same guard.
CREATE TABLE activity_variants (
    activity_id  BIGINT UNSIGNED  NOT NULL,
    idx          SMALLINT         NOT NULL,
    name         VARBINARY(256)   NOT NULL,
    external_ref VARCHAR(128)     NULL,
    stock_total  BIGINT           NOT NULL,
    sold         BIGINT           NOT NULL DEFAULT 0,
    PRIMARY KEY (activity_id, idx),
    UNIQUE KEY activity_variants_name (activity_id, name),
    CONSTRAINT activity_variants_idx CHECK (idx BETWEEN 0 AND 99),
    CONSTRAINT activity_variants_sold CHECK (sold BETWEEN 0 AND stock_total)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;

-- per_variant_limit caps the units of one variant a buyer holds (NULL: none).
ALTER TABLE activities ADD COLUMN per_variant_limit INT NULL;

-- An order of a sale of variants names its variant, by name (the API's) and by index
-- (Redis's); both NULL in any other sale.
ALTER TABLE orders ADD COLUMN variant VARBINARY(256) NULL, ADD COLUMN variant_index SMALLINT NULL;

-- +goose Down
ALTER TABLE orders DROP COLUMN variant_index, DROP COLUMN variant;
ALTER TABLE activities DROP COLUMN per_variant_limit;
DROP TABLE activity_variants;
