package outbox

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"seckill/internal/apitime"
)

// ErrNotFound means no such webhook (or one deleted).
var ErrNotFound = errors.New("no such webhook")

// Webhook is a subscribed endpoint as the API shows it. Secret is shown only when it is
// made.
type Webhook struct {
	ID     int64    `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	// Secret signs its deliveries: whsec_ followed by the base64 of 32 random bytes.
	Secret    string       `json:"secret,omitempty"`
	CreatedAt apitime.Time `json:"created_at"`
	// DisabledAt is when it answered 410 Gone: it gets no more deliveries.
	DisabledAt     *apitime.Time `json:"disabled_at,omitempty"`
	DisabledReason string        `json:"disabled_reason,omitempty"`
}

// Delivery is an event's delivery to one endpoint, as the API shows it.
type Delivery struct {
	EventID string `json:"event_id"`
	Type    string `json:"type"`
	// Status is pending (waiting for its next try, or being tried), delivered (a 2xx
	// answer) or failed (given up: no 2xx within the retry schedule, or the endpoint
	// was disabled).
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	// LastStatusCode is the HTTP status of the last attempt; null before the first
	// attempt, or when the last one got no answer (LastError says why).
	LastStatusCode *int          `json:"last_status_code"`
	NextAttemptAt  *apitime.Time `json:"next_attempt_at,omitempty"`
	LastError      string        `json:"last_error,omitempty"`
	// CreatedAt is when the change happened (the event's created_at).
	CreatedAt   apitime.Time  `json:"created_at"`
	DeliveredAt *apitime.Time `json:"delivered_at,omitempty"`
}

// Delivery statuses.
const (
	statusPending   = "pending"
	statusDelivered = "delivered"
	statusFailed    = "failed"
)

// Webhooks manages the endpoints that receive the events, for admins.
type Webhooks struct {
	db       *gorm.DB
	resolver *net.Resolver
	now      func() time.Time
	// AllowPrivate lets webhook URLs point at loopback and private addresses
	// (SECKILL_WEBHOOK_ALLOW_PRIVATE).
	AllowPrivate bool
}

// NewWebhooks returns the webhooks stored in db.
func NewWebhooks(db *gorm.DB, allowPrivate bool) *Webhooks {
	return &Webhooks{db: db, resolver: net.DefaultResolver, now: time.Now, AllowPrivate: allowPrivate}
}

// webhookRow is one row of webhooks.
type webhookRow struct {
	ID             int64
	URL            string
	Events         string
	Secret         string
	CreatedAt      time.Time
	DisabledAt     *time.Time
	DisabledReason *string
}

func (r webhookRow) view() Webhook {
	w := Webhook{ID: r.ID, URL: r.URL, Events: strings.Split(r.Events, ","), CreatedAt: apitime.Of(r.CreatedAt),
		DisabledAt: apitime.OfPtr(r.DisabledAt)}
	if r.DisabledReason != nil {
		w.DisabledReason = *r.DisabledReason
	}
	return w
}

// subscribes reports whether the endpoint wants events of type typ.
func (r webhookRow) subscribes(typ string) bool {
	return slices.Contains(strings.Split(r.Events, ","), typ)
}

// Create subscribes url to the event types in events (nil: all of them) and returns
// the endpoint with its secret. Errors: *FieldError for a URL or a type it refuses.
func (w *Webhooks) Create(ctx context.Context, url string, events []string) (Webhook, error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := checkURL(rctx, w.resolver, url, w.AllowPrivate); err != nil {
		return Webhook{}, err
	}
	types, err := eventTypes(events)
	if err != nil {
		return Webhook{}, err
	}
	var key [32]byte
	if _, err := rand.Read(key[:]); err != nil {
		return Webhook{}, err
	}
	r := webhookRow{URL: url, Events: strings.Join(types, ","), Secret: "whsec_" + base64.StdEncoding.EncodeToString(key[:]),
		CreatedAt: w.now().UTC().Truncate(time.Millisecond)}
	if err := w.db.WithContext(ctx).Table("webhooks").Create(&r).Error; err != nil {
		return Webhook{}, fmt.Errorf("create webhook: %w", err)
	}
	v := r.view()
	v.Secret = r.Secret
	return v, nil
}

// eventTypes checks a list of event types and returns it in the order of Types, each
// once; nil is all of them.
func eventTypes(events []string) ([]string, error) {
	if events == nil {
		return Types, nil
	}
	if len(events) == 0 {
		return nil, &FieldError{"events", "must list at least one event type, or be left out for all of them"}
	}
	for _, e := range events {
		if !slices.Contains(Types, e) {
			return nil, &FieldError{"events", fmt.Sprintf("has %q, which is not one of %s", e, strings.Join(Types, ", "))}
		}
	}
	var out []string
	for _, t := range Types {
		if slices.Contains(events, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// List returns the endpoints, newest first, without their secrets.
func (w *Webhooks) List(ctx context.Context) ([]Webhook, error) {
	var rows []webhookRow
	if err := w.db.WithContext(ctx).Table("webhooks").Where("deleted_at IS NULL").Order("id DESC").
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	out := make([]Webhook, len(rows))
	for i, r := range rows {
		out[i] = r.view()
	}
	return out, nil
}

// Delete unsubscribes an endpoint: it gets no more deliveries, and the worker prunes
// its delivery records. Errors: ErrNotFound.
func (w *Webhooks) Delete(ctx context.Context, id int64) error {
	res := w.db.WithContext(ctx).Exec("UPDATE webhooks SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL",
		w.now().UTC(), id)
	if res.Error != nil {
		return fmt.Errorf("delete webhook: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return ErrNotFound
	}
	return nil
}

// Deliveries returns up to limit of an endpoint's deliveries, newest event first.
// Errors: ErrNotFound.
func (w *Webhooks) Deliveries(ctx context.Context, id int64, limit int) ([]Delivery, error) {
	db := w.db.WithContext(ctx)
	var n int64
	if err := db.Table("webhooks").Where("id = ? AND deleted_at IS NULL", id).Count(&n).Error; err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	if n == 0 {
		return nil, ErrNotFound
	}
	var rows []struct {
		EventID, Type, Status      string
		Attempts                   int
		LastStatusCode             *int
		NextAttemptAt, DeliveredAt *time.Time
		LastError                  *string
		CreatedAt                  time.Time
	}
	if err := db.Raw("SELECT e.id AS event_id, e.type, d.status, d.attempts, d.last_status_code, d.next_attempt_at, "+
		"d.delivered_at, d.last_error, e.created_at FROM webhook_deliveries d JOIN outbox_events e ON e.seq = d.event_seq "+
		"WHERE d.webhook_id = ? ORDER BY d.event_seq DESC LIMIT ?", id, limit).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("deliveries: %w", err)
	}
	out := make([]Delivery, len(rows))
	for i, r := range rows {
		out[i] = Delivery{EventID: r.EventID, Type: r.Type, Status: r.Status, Attempts: r.Attempts,
			LastStatusCode: r.LastStatusCode, CreatedAt: apitime.Of(r.CreatedAt), DeliveredAt: apitime.OfPtr(r.DeliveredAt)}
		if r.Status == statusPending {
			out[i].NextAttemptAt = apitime.OfPtr(r.NextAttemptAt)
		}
		if r.LastError != nil {
			out[i].LastError = *r.LastError
		}
	}
	return out, nil
}
