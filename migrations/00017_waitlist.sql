-- +goose Up
-- An order the waitlist made of units that came back, offered to the buyer who asked
-- first (docs/internals.md, "Buyers and variants: how they are kept"), not a purchase.
ALTER TABLE orders ADD COLUMN offered BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE orders DROP COLUMN offered;
