package outbox

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"seckill/internal/telemetry"
)

// DefaultBackoff is the wait after each failed attempt before the next one: the
// schedule the Standard Webhooks specification recommends. An event whose 8th attempt
// fails, 27 h 35 min after the first, is given up.
var DefaultBackoff = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Deliverer is the worker's delivery loop. Each round it fans new events out to the
// endpoints subscribed (one delivery row each), claims due deliveries with SELECT ...
// FOR UPDATE SKIP LOCKED, and hands them to a fixed pool of senders; their outcomes are
// written back in batches. A claimed attempt is leased: its next try is set Lease ahead,
// so another worker takes it up only if this one died (SIGKILL mid-delivery loses
// nothing; two workers never make one attempt at once), except the schedule's last: that
// one unrecorded gives the delivery up, so no endpoint gets more tries than Backoff
// says. A delivery is claimed only when no earlier event of its order (or group) is
// still pending for that endpoint.
type Deliverer struct {
	db      *gorm.DB
	client  *http.Client
	metrics *metrics
	now     func() time.Time

	// Senders is how many deliveries are in flight at once.
	Senders int
	// Batch is the most events fanned out, and deliveries claimed, in one statement.
	Batch int
	// Poll is how long the loop waits when it found nothing to do.
	Poll time.Duration
	// Timeout bounds one attempt: connecting, sending, and the answer's status and
	// first 64 KiB.
	Timeout time.Duration
	// Lease is how long a claimed attempt is held; past it, another worker may try the
	// delivery again. It must exceed Timeout.
	Lease time.Duration
	// Backoff is the wait after each failed attempt (DefaultBackoff).
	Backoff []time.Duration
	// Tracer, when set, makes each attempt of an event that carries a trace a span of
	// that trace (internal/telemetry), and sends its traceparent to the endpoint.
	Tracer trace.TracerProvider
}

// NewDeliverer returns a delivery loop over db. Unless allowPrivate, it refuses to
// connect to loopback and private addresses, whatever a webhook's host resolves to now.
func NewDeliverer(db *gorm.DB, allowPrivate bool) *Deliverer {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = refusePrivate
	}
	d := &Deliverer{db: db, now: time.Now, Senders: 32, Batch: 500, Poll: 100 * time.Millisecond,
		Timeout: 15 * time.Second, Backoff: DefaultBackoff}
	d.Lease = d.Timeout + 15*time.Second
	d.client = &http.Client{
		Transport: &http.Transport{Proxy: nil, DialContext: dialer.DialContext, ForceAttemptHTTP2: true,
			MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second},
		// A redirect is not followed: the answer is the 3xx, a failed attempt.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return d
}

// SetClock replaces the clock (tests).
func (d *Deliverer) SetClock(now func() time.Time) { d.now = now }

// attempt is one claimed try of a delivery.
type attempt struct {
	webhook  int64
	seq      int64
	attempts int // this attempt's number, 1 for the first
	url      string
	signer   *standardwebhooks.Webhook
	eventID  string
	body     []byte
	changeAt time.Time // the event's created_at
	trace    string    // the event's traceparent, "" for none
	// startBy is the latest start that ends within the lease (claimed + Lease -
	// Timeout): an attempt that waited longer for a sender is not made but handed back
	// (release), so two attempts never overlap.
	startBy time.Time
}

// result is what an attempt got.
type result struct {
	attempt
	code int    // the HTTP status; 0 for none
	err  string // why there was no answer
	at   time.Time
	// late means the attempt was not made: it waited past startBy.
	late bool
}

func (r result) ok() bool { return r.code >= 200 && r.code < 300 }

// Run delivers until ctx ends, then waits for the attempts in flight (each bounded by
// Timeout) and records them.
func (d *Deliverer) Run(ctx context.Context) {
	d.client.Timeout = d.Timeout
	jobs := make(chan attempt)
	results := make(chan result, d.Senders)
	var inflight atomic.Int64
	room := make(chan struct{}, 1) // a recorded batch freed senders
	var senders sync.WaitGroup
	for range d.Senders {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for a := range jobs {
				results <- d.send(a)
			}
		}()
	}
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		d.recordLoop(results, func(n int) {
			inflight.Add(int64(-n))
			select {
			case room <- struct{}{}:
			default:
			}
		})
	}()

	for ctx.Err() == nil {
		busy, err := d.round(ctx, jobs, &inflight)
		if err != nil && ctx.Err() == nil {
			slog.Warn("webhook delivery round failed", "err", err)
		}
		if busy && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-room:
		case <-time.After(d.Poll):
		}
	}
	close(jobs)
	senders.Wait()
	close(results)
	<-recorded
}

// claimAhead is how many attempts per sender a loop keeps claimed (being made, or
// waiting for a sender), so the senders never wait for a claim's round trip.
const claimAhead = 4

// round fans new events out and hands the due deliveries to the senders, as many as
// there is room for. It reports whether it found anything to do.
func (d *Deliverer) round(ctx context.Context, jobs chan<- attempt, inflight *atomic.Int64) (bool, error) {
	fanned, err := d.FanOut(ctx)
	if err != nil {
		return false, err
	}
	room := claimAhead*d.Senders - int(inflight.Load())
	if room <= 0 {
		return fanned > 0, nil
	}
	claimed, err := d.claim(ctx, min(room, d.Batch))
	for _, a := range claimed {
		inflight.Add(1)
		jobs <- a
	}
	return fanned > 0 || len(claimed) > 0, err
}

// readCommitted is the isolation of the fan-out and the claims: no gap locks, so they
// never hold up the transactions that write events.
var readCommitted = &sql.TxOptions{Isolation: sql.LevelReadCommitted}

// FanOut turns up to Batch undispatched events, oldest first, into deliveries to the
// endpoints subscribed to them now, and marks them dispatched, in one transaction. It
// returns how many events it dispatched. Its locking read makes fan-outs run one at a
// time and wait for transactions still writing events, so the events of one order get
// their deliveries in the order they happened.
func (d *Deliverer) FanOut(ctx context.Context) (int, error) {
	n := 0
	err := d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var events []struct {
			Seq           int64
			Type, Subject string
		}
		if err := tx.Raw("SELECT seq, type, subject FROM outbox_events WHERE dispatched = 0 ORDER BY seq LIMIT ? FOR UPDATE",
			d.Batch).Scan(&events).Error; err != nil {
			return fmt.Errorf("read new events: %w", err)
		}
		if len(events) == 0 {
			return nil
		}
		hooks, err := enabledWebhooks(tx)
		if err != nil {
			return err
		}
		now := d.now().UTC()
		seqs := make([]int64, len(events))
		var values []string
		var args []any
		for i, e := range events {
			seqs[i] = e.Seq
			for _, h := range hooks {
				if h.subscribes(e.Type) {
					values = append(values, "(?, ?, ?, 'pending', ?)")
					args = append(args, h.ID, e.Seq, e.Subject, now)
				}
			}
		}
		for len(values) > 0 {
			k := min(len(values), 1000)
			if err := tx.Exec("INSERT INTO webhook_deliveries (webhook_id, event_seq, subject, status, next_attempt_at) VALUES "+
				strings.Join(values[:k], ", "), args[:4*k]...).Error; err != nil {
				return fmt.Errorf("fan out: %w", err)
			}
			values, args = values[k:], args[4*k:]
		}
		if err := tx.Exec("UPDATE outbox_events SET dispatched = 1 WHERE seq IN ?", seqs).Error; err != nil {
			return fmt.Errorf("mark events dispatched: %w", err)
		}
		n = len(events)
		return nil
	}, readCommitted)
	return n, err
}

// enabledWebhooks returns the endpoints that take deliveries: neither disabled nor
// deleted.
func enabledWebhooks(db *gorm.DB) ([]webhookRow, error) {
	var hooks []webhookRow
	if err := db.Table("webhooks").Where("disabled_at IS NULL AND deleted_at IS NULL").Find(&hooks).Error; err != nil {
		return nil, fmt.Errorf("read webhooks: %w", err)
	}
	return hooks, nil
}

// claim takes up to n due deliveries whose earlier events of the same subject are all
// done for their endpoint, leases them (attempts + 1, next try Lease ahead), and
// returns them with their bodies. A delivery whose last try's lease ran out before its
// result was recorded is given up first, not tried again: the schedule's tries are the
// most an endpoint gets.
//
// The NOT EXISTS reads without locking (a subquery of a locking read does, in InnoDB),
// so a claim never skips an earlier event that another claim holds: that one is pending,
// and its successor waits.
func (d *Deliverer) claim(ctx context.Context, n int) ([]attempt, error) {
	db := d.db.WithContext(ctx)
	hooks, err := enabledWebhooks(db)
	if err != nil || len(hooks) == 0 {
		return nil, err
	}
	byID := make(map[int64]webhookRow, len(hooks))
	ids := make([]int64, len(hooks))
	for i, h := range hooks {
		byID[h.ID], ids[i] = h, h.ID
	}
	type due struct {
		WebhookID, EventSeq int64
		Attempts            int
	}
	var claimed []due
	now := d.now().UTC()
	err = db.Transaction(func(tx *gorm.DB) error {
		if err := d.giveUpUnrecorded(tx, ids, now); err != nil {
			return err
		}
		if err := tx.Raw("SELECT d.webhook_id, d.event_seq, d.attempts FROM webhook_deliveries d "+
			"WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND d.webhook_id IN ? AND d.attempts <= ? AND NOT EXISTS ("+
			"SELECT 1 FROM webhook_deliveries p WHERE p.webhook_id = d.webhook_id AND p.subject = d.subject "+
			"AND p.status = 'pending' AND p.event_seq < d.event_seq) "+
			"ORDER BY d.next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED", now, ids, len(d.Backoff), n).Scan(&claimed).Error; err != nil {
			return fmt.Errorf("claim deliveries: %w", err)
		}
		for webhook, seqs := range seqsByWebhook(claimed, func(c due) (int64, int64) { return c.WebhookID, c.EventSeq }) {
			if err := tx.Exec("UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, last_attempt_at = ? "+
				"WHERE webhook_id = ? AND event_seq IN ?", now.Add(d.Lease), now, webhook, seqs).Error; err != nil {
				return fmt.Errorf("lease deliveries: %w", err)
			}
		}
		return nil
	}, readCommitted)
	if err != nil || len(claimed) == 0 {
		return nil, err
	}

	seqs := make([]int64, len(claimed))
	for i, c := range claimed {
		seqs[i] = c.EventSeq
	}
	var events []struct {
		Seq         int64
		ID          string
		Body        []byte
		CreatedAt   time.Time
		Traceparent *string
	}
	if err := db.Raw("SELECT seq, id, body, created_at, traceparent FROM outbox_events WHERE seq IN ?", seqs).Scan(&events).Error; err != nil {
		return nil, fmt.Errorf("read claimed events: %w", err)
	}
	bySeq := make(map[int64]int, len(events))
	for i, e := range events {
		bySeq[e.Seq] = i
	}
	signers := map[int64]*standardwebhooks.Webhook{}
	out := make([]attempt, 0, len(claimed))
	for _, c := range claimed {
		h := byID[c.WebhookID]
		signer, ok := signers[h.ID]
		if !ok {
			if signer, err = standardwebhooks.NewWebhook(h.Secret); err != nil {
				return nil, fmt.Errorf("webhook %d: its secret: %w", h.ID, err)
			}
			signers[h.ID] = signer
		}
		a := attempt{webhook: c.WebhookID, seq: c.EventSeq, attempts: c.Attempts + 1, url: h.URL, signer: signer,
			startBy: now.Add(d.Lease - d.Timeout)}
		if i, ok := bySeq[c.EventSeq]; ok {
			e := events[i]
			a.eventID, a.body, a.changeAt = e.ID, e.Body, e.CreatedAt
			if e.Traceparent != nil {
				a.trace = *e.Traceparent
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// unrecordedError is the last_error of a delivery given up because its last try's lease
// ran out unrecorded; that try's result, if it comes later, replaces it.
const unrecordedError = "given up: the last try's result was not recorded within its lease"

// giveUpUnrecorded gives up the deliveries whose last try (the schedule's last) was
// claimed and whose lease ran out with no result recorded: its worker stopped, or
// recording lagged. Claimed again, the delivery would get one try more than the
// schedule, however many times that happens.
func (d *Deliverer) giveUpUnrecorded(tx *gorm.DB, ids []int64, now time.Time) error {
	if err := tx.Exec("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_status_code = NULL, "+
		"last_error = ? WHERE status = 'pending' AND next_attempt_at <= ? AND webhook_id IN ? AND attempts > ?",
		unrecordedError, now, ids, len(d.Backoff)).Error; err != nil {
		return fmt.Errorf("give up deliveries whose last try was not recorded: %w", err)
	}
	return nil
}

// seqsByWebhook groups event sequence numbers by endpoint, so an UPDATE names one
// endpoint and a list of its primary key's second column.
func seqsByWebhook[T any](items []T, key func(T) (webhook, seq int64)) map[int64][]int64 {
	out := map[int64][]int64{}
	for _, it := range items {
		w, s := key(it)
		out[w] = append(out[w], s)
	}
	return out
}

// send makes one attempt: POST the body, signed, and read the answer's status.
func (d *Deliverer) send(a attempt) result {
	ts := d.now()
	if ts.After(a.startBy) {
		return result{attempt: a, late: true, at: ts}
	}
	if a.body == nil { // its event was pruned: nothing to send
		return result{attempt: a, err: "the event is no longer stored", at: ts}
	}
	sig, err := a.signer.Sign(a.eventID, ts, a.body)
	if err != nil {
		return result{attempt: a, err: "sign: " + err.Error(), at: d.now()}
	}
	ctx, span := context.Background(), trace.SpanFromContext(context.Background())
	if d.Tracer != nil && a.trace != "" {
		ctx, span = telemetry.Remote(ctx, d.Tracer, a.trace, "webhook delivery", trace.SpanKindClient,
			attribute.String("webhook.event_id", a.eventID), attribute.Int64("webhook.id", a.webhook),
			attribute.Int("webhook.attempt", a.attempts), attribute.String("url.full", a.url))
	}
	r := d.post(ctx, a, ts, sig)
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("http.response.status_code", r.code))
		var failed error
		if !r.ok() {
			failed = fmt.Errorf("not delivered: status %d %s", r.code, r.err)
		}
		telemetry.End(span, failed)
	}
	return r
}

// post sends the signed body, with ctx's traceparent when it has one.
func (d *Deliverer) post(ctx context.Context, a attempt, ts time.Time, sig string) result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.url, bytes.NewReader(a.body))
	if err != nil {
		return result{attempt: a, err: err.Error(), at: d.now()}
	}
	telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seckill-webhooks/1")
	req.Header.Set(standardwebhooks.HeaderWebhookID, a.eventID)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	resp, err := d.client.Do(req)
	if err != nil {
		return result{attempt: a, err: shortError(err), at: d.now()}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	return result{attempt: a, code: resp.StatusCode, at: d.now()}
}

// shortError is why an attempt got no answer, in at most 255 bytes.
func shortError(err error) string {
	var ue interface{ Timeout() bool }
	msg := err.Error()
	if errors.As(err, &ue) && ue.Timeout() {
		msg = "no answer within the timeout: " + msg
	}
	if len(msg) > 255 {
		msg = msg[:255]
	}
	return msg
}

// recordLoop writes the results as they come, in batches: whatever arrived while the
// last batch was being written. done is told how many it wrote.
func (d *Deliverer) recordLoop(results <-chan result, done func(n int)) {
	for r := range results {
		batch := []result{r}
	more:
		for len(batch) < 500 {
			select {
			case r, ok := <-results:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		d.recordRetrying(batch)
		done(len(batch))
	}
}

// recordRetrying records a batch, trying again for a while when MySQL refuses or is
// away. A batch it cannot record is left as it is: its leases run out, and the
// deliveries are tried again (an endpoint may then get an event twice, which at least
// once allows).
func (d *Deliverer) recordRetrying(batch []result) {
	var err error
	for wait := 50 * time.Millisecond; wait < 5*time.Second; wait *= 2 {
		if err = d.record(context.Background(), batch); err == nil {
			return
		}
		time.Sleep(wait)
	}
	slog.Error("webhook delivery results not recorded; the deliveries will be tried again", "deliveries", len(batch), "err", err)
}

// disabledReason is why an endpoint that answered 410 is disabled; goneError the
// last_error of its deliveries given up then.
const (
	disabledReason = "it answered 410 Gone"
	goneError      = "the endpoint answered 410 Gone and was disabled"
)

// record writes a batch of results in one transaction: a 2xx marks the delivery
// delivered; a 410 disables the endpoint and gives up its pending deliveries; anything
// else schedules the next try by Backoff, or gives the delivery up after the last one.
// Each update names the attempt it records, so a result that comes after its lease ran
// out (another worker took the delivery up) changes nothing.
func (d *Deliverer) record(ctx context.Context, batch []result) error {
	now := d.now().UTC()
	type group struct {
		webhook  int64
		attempts int
		code     int
	}
	delivered := map[group][]int64{}
	err := d.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		clear(delivered)
		for _, r := range batch {
			switch {
			case r.late:
				if err := release(tx, r, now); err != nil {
					return err
				}
			case r.ok():
				g := group{r.webhook, r.attempts, r.code}
				delivered[g] = append(delivered[g], r.seq)
			case r.code == http.StatusGone:
				if err := disable(tx, r, now); err != nil {
					return err
				}
			default:
				if err := d.retryLater(tx, r, now); err != nil {
					return err
				}
			}
		}
		// A 2xx stands even if the endpoint's 410 to another delivery, recorded first,
		// gave this one up meanwhile: the endpoint has the event.
		for g, seqs := range delivered {
			if err := tx.Exec("UPDATE webhook_deliveries SET status = 'delivered', last_status_code = ?, last_error = NULL, "+
				"delivered_at = ?, next_attempt_at = NULL WHERE webhook_id = ? AND attempts = ? AND status <> 'delivered' "+
				"AND event_seq IN ?", g.code, now, g.webhook, g.attempts, seqs).Error; err != nil {
				return fmt.Errorf("record deliveries: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range batch {
		if !r.late {
			d.metrics.attempted(d.outcome(r), r.changeAt, r.at)
		}
	}
	return nil
}

// outcome names what an attempt's result did, for the metrics.
func (d *Deliverer) outcome(r result) string {
	switch {
	case r.ok():
		return "delivered"
	case r.code == http.StatusGone:
		return "disabled"
	case r.attempts > len(d.Backoff) || r.body == nil:
		return "gave_up"
	}
	return "retry"
}

// retryLater records a failed attempt: the next try after Backoff (with up to 10 %
// more, so endpoints that failed together are not retried together), or, after the
// last, the delivery given up. The last try's result recorded after its lease ran out
// replaces the reason giveUpUnrecorded wrote.
func (d *Deliverer) retryLater(tx *gorm.DB, r result, now time.Time) error {
	status, next := statusPending, any(nil)
	if r.attempts > len(d.Backoff) || r.body == nil {
		status = statusFailed
	} else {
		wait := d.Backoff[r.attempts-1]
		next = now.Add(wait + time.Duration(rand.Int64N(int64(wait)/10+1)))
	}
	if err := tx.Exec("UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, last_status_code = ?, last_error = ? "+
		"WHERE webhook_id = ? AND event_seq = ? AND attempts = ? AND (status = 'pending' OR last_error = ?)",
		status, next, nullCode(r.code), lastError(r), r.webhook, r.seq, r.attempts, unrecordedError).Error; err != nil {
		return fmt.Errorf("record a failed delivery: %w", err)
	}
	return nil
}

// release hands back an attempt that was not made: its claim is undone (the attempt
// not counted, the delivery due now), unless its lease ran out and it was claimed again.
func release(tx *gorm.DB, r result, now time.Time) error {
	if err := tx.Exec("UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = ? "+
		"WHERE webhook_id = ? AND event_seq = ? AND attempts = ? AND status = 'pending'",
		now, r.webhook, r.seq, r.attempts).Error; err != nil {
		return fmt.Errorf("release a delivery: %w", err)
	}
	return nil
}

// disable records a 410: the endpoint is disabled and its pending deliveries given up.
func disable(tx *gorm.DB, r result, now time.Time) error {
	if err := tx.Exec("UPDATE webhooks SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL",
		now, disabledReason, r.webhook).Error; err != nil {
		return fmt.Errorf("disable webhook: %w", err)
	}
	if err := tx.Exec("UPDATE webhook_deliveries SET status = 'failed', last_status_code = 410, last_error = ? "+
		"WHERE webhook_id = ? AND event_seq = ? AND attempts = ?", goneError,
		r.webhook, r.seq, r.attempts).Error; err != nil {
		return fmt.Errorf("record a 410: %w", err)
	}
	// last_attempt_at of one never tried is when it was given up, for Prune.
	if err := tx.Exec("UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL, last_error = ?, "+
		"last_attempt_at = COALESCE(last_attempt_at, ?) WHERE webhook_id = ? AND status = 'pending'",
		"given up: "+goneError, now, r.webhook).Error; err != nil {
		return fmt.Errorf("give up a disabled webhook's deliveries: %w", err)
	}
	slog.Warn("webhook disabled: it answered 410 Gone", "webhook", r.webhook, "url", r.url)
	return nil
}

func nullCode(code int) any {
	if code == 0 {
		return nil
	}
	return code
}

// lastError is a failed attempt's reason for the delivery's last_error.
func lastError(r result) string {
	if r.err != "" {
		return r.err
	}
	if r.code >= 300 && r.code < 400 {
		return fmt.Sprintf("answered %d (redirects are not followed)", r.code)
	}
	return fmt.Sprintf("answered %d", r.code)
}
