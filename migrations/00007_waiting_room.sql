-- +goose Up
-- A sale's waiting room (internal/line): buyers join a line, are admitted in its order
-- at admit_per_second, and buy with a pass valid pass_ttl_seconds; they may join from
-- prequeue_seconds before starts_at; with challenge on, joining needs a proof-of-work of
-- challenge_cost (the ALTCHA challenge's maxnumber). The line itself lives in Redis.
ALTER TABLE activities
    ADD COLUMN waiting_room     BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN admit_per_second INT     NULL,
    ADD COLUMN pass_ttl_seconds INT     NOT NULL DEFAULT 300,
    ADD COLUMN prequeue_seconds INT     NOT NULL DEFAULT 600,
    ADD COLUMN challenge        BOOLEAN NOT NULL DEFAULT FALSE,
    ADD COLUMN challenge_cost   INT     NOT NULL DEFAULT 50000,
    ADD CONSTRAINT activities_waiting_room CHECK (NOT waiting_room OR admit_per_second IS NOT NULL);

-- +goose Down
ALTER TABLE activities DROP CONSTRAINT activities_waiting_room, DROP COLUMN waiting_room,
    DROP COLUMN admit_per_second, DROP COLUMN pass_ttl_seconds, DROP COLUMN prequeue_seconds,
    DROP COLUMN challenge, DROP COLUMN challenge_cost;
