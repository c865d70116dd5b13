-- +goose Up
-- What an archived sale's line last showed of its admissions: the highest place it had
-- admitted (NULL for a sale without a waiting room, or one archived before this column),
-- so its public status after the archive reads as it did before (internal/funnel).
ALTER TABLE sale_funnels ADD COLUMN line_admitted_through BIGINT NULL AFTER line_admitted;

-- +goose Down
ALTER TABLE sale_funnels DROP COLUMN line_admitted_through;
