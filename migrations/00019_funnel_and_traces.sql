-- +goose Up
-- See the drop (internal/funnel, internal/telemetry).
-- An event's traceparent: the trace of the change that made it (the worker's span of a
-- new order), so each delivery of it is a span of that trace; NULL for none.
ALTER TABLE outbox_events ADD COLUMN traceparent VARCHAR(55) NULL;
-- What the funnel of a sale reads from Redis while the sale is live, kept when the sale
-- is archived (written once, before its Redis keys are removed): the line's counts
-- (NULL for a sale without a waiting room), its buyers' waits (a JSON object of wait in
-- milliseconds -> buyers, every admitted buyer counted once) and the purchases the APIs
-- refused (a JSON object of error code -> requests).
CREATE TABLE sale_funnels (
    activity_id              BIGINT UNSIGNED NOT NULL,
    line_joined              BIGINT          NULL,
    line_joined_before_start BIGINT          NULL,
    line_admitted            BIGINT          NULL,
    line_passes_expired      BIGINT          NULL,
    line_waits               MEDIUMTEXT      NULL,
    refused                  TEXT            NOT NULL,
    kept_at                  DATETIME(3)     NOT NULL,
    PRIMARY KEY (activity_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4;
-- +goose Down
DROP TABLE sale_funnels;
ALTER TABLE outbox_events DROP COLUMN traceparent;
