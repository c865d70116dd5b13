package outbox

import (
	"context"
	"fmt"
	"time"
)

// Keep is how long delivered and given-up deliveries, and the events all of whose
// deliveries are done, stay readable (GET .../deliveries) before Prune removes them.
const Keep = 7 * 24 * time.Hour

// Prune removes, at most limit rows of each kind per call: the deliveries of deleted
// endpoints, then the deleted endpoints left with none; deliveries done (delivered or
// given up) more than Keep ago; and events dispatched more than Keep ago that no
// delivery names any more. A pending delivery and its event are never removed. It
// returns how many rows it removed.
func (d *Deliverer) Prune(ctx context.Context, limit int) (int64, error) {
	db := d.db.WithContext(ctx)
	before := d.now().UTC().Add(-Keep)
	steps := []struct {
		what  string
		query string
		args  []any
	}{
		{"deleted endpoints' deliveries", "DELETE FROM webhook_deliveries WHERE webhook_id IN " +
			"(SELECT id FROM webhooks WHERE deleted_at IS NOT NULL) LIMIT ?", []any{limit}},
		{"deleted endpoints", "DELETE FROM webhooks WHERE deleted_at IS NOT NULL AND NOT EXISTS " +
			"(SELECT 1 FROM webhook_deliveries d WHERE d.webhook_id = webhooks.id) LIMIT ?", []any{limit}},
		{"old deliveries", "DELETE FROM webhook_deliveries WHERE status IN ('delivered', 'failed') " +
			"AND last_attempt_at < ? LIMIT ?", []any{before, limit}},
		{"old events", "DELETE FROM outbox_events WHERE dispatched = 1 AND created_at < ? AND NOT EXISTS " +
			"(SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = outbox_events.seq) LIMIT ?", []any{before, limit}},
	}
	var n int64
	for _, s := range steps {
		res := db.Exec(s.query, s.args...)
		if res.Error != nil {
			return n, fmt.Errorf("prune %s: %w", s.what, res.Error)
		}
		n += res.RowsAffected
	}
	return n, nil
}
