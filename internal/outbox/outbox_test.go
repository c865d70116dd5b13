package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"seckill/internal/outbox"
	"seckill/internal/testutil"
)

// fast is a retry schedule short enough for tests: three tries in all.
var fast = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}

// subscribe creates an endpoint for r (private addresses allowed) and gives r its
// secret.
func subscribe(t *testing.T, hooks *outbox.Webhooks, r *testutil.Receiver, events ...string) outbox.Webhook {
	t.Helper()
	w, err := hooks.Create(t.Context(), r.URL, events)
	if err != nil {
		t.Fatal(err)
	}
	r.SetSecret(t, w.Secret)
	return w
}

// record writes events, each in a transaction of its own, as the store does.
func record(t *testing.T, db *gorm.DB, events ...outbox.Event) {
	t.Helper()
	for _, e := range events {
		if err := db.Transaction(func(tx *gorm.DB) error { return outbox.Record(tx, e) }); err != nil {
			t.Fatal(err)
		}
	}
}

func orderEvent(typ, id string) outbox.Event {
	return outbox.Event{Type: typ, Subject: id, At: time.Now(), Data: map[string]any{"order": map[string]any{"id": id}}}
}

// run starts n delivery loops, stopped at cleanup; configure adjusts each.
func run(t *testing.T, db *gorm.DB, n int, allowPrivate bool, configure func(*outbox.Deliverer)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		d := outbox.NewDeliverer(db, allowPrivate)
		d.Backoff, d.Poll = fast, 20*time.Millisecond
		if configure != nil {
			configure(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.Run(ctx)
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deliveries returns an endpoint's deliveries by status.
func deliveries(t *testing.T, hooks *outbox.Webhooks, id int64) map[string][]outbox.Delivery {
	t.Helper()
	list, err := hooks.Deliveries(t.Context(), id, 10000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]outbox.Delivery{}
	for _, d := range list {
		out[d.Status] = append(out[d.Status], d)
	}
	return out
}

// Two delivery loops (two workers) deliver 60 events of 20 orders to two endpoints, one
// of which refuses the first try of every event: every event reaches both, signed (the
// receiver checks with the official library), each order's events in order, the
// webhook-id the same on the retry, and no attempt made twice.
func TestDeliveredSignedInOrderOnce(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	flaky, healthy := testutil.StartReceiver(t), testutil.StartReceiver(t)
	flaky.Answer = func(_ testutil.Received, n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}
	fw, hw := subscribe(t, hooks, flaky), subscribe(t, hooks, healthy)
	run(t, db, 2, true, nil)

	const orders = 20
	want := map[string][]string{}
	for step, typ := range []string{outbox.OrderCreated, outbox.OrderPaid, outbox.OrderCancelled} {
		for i := range orders {
			id := fmt.Sprintf("order-%02d", i)
			record(t, db, orderEvent(typ, id))
			want[id] = append(want[id], typ)
		}
		if step == 0 {
			// Some are delivered before the next are written: the interleaving under test.
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFor(t, "every event delivered to both", func() bool {
		return len(flaky.Accepted()) == 3*orders && len(healthy.Accepted()) == 3*orders
	})
	// A quiet period in which nothing more may arrive: the behaviour under test.
	time.Sleep(300 * time.Millisecond)

	for name, r := range map[string]*testutil.Receiver{"flaky": flaky, "healthy": healthy} {
		if bad := r.Invalid(); len(bad) > 0 {
			t.Errorf("%s: %d deliveries whose signature did not verify: %q", name, len(bad), bad[0])
		}
		got := map[string][]string{}
		tries := map[string]int{}
		for _, d := range r.Deliveries() {
			tries[d.ID]++
			if d.Status < 300 {
				got[d.Subject] = append(got[d.Subject], d.Type)
			}
		}
		for id, types := range want {
			if strings.Join(got[id], " ") != strings.Join(types, " ") {
				t.Errorf("%s: order %s got %v, want %v in that order", name, id, got[id], types)
			}
		}
		wantTries := map[string]int{"flaky": 2, "healthy": 1}[name]
		for id, n := range tries {
			if n != wantTries {
				t.Errorf("%s: event %s arrived %d times, want %d", name, id, n, wantTries)
			}
		}
	}
	// A refused first try precedes its retry, with the same id: the order's next event
	// came only after the retry.
	first, accepted := map[string]int{}, map[string]int{}
	events := map[string][]string{} // each order's event ids, in the order of their first tries
	for i, d := range flaky.Deliveries() {
		if d.Status < 300 {
			accepted[d.ID] = i
		}
		if _, ok := first[d.ID]; !ok {
			first[d.ID] = i
			events[d.Subject] = append(events[d.Subject], d.ID)
			if d.Status != http.StatusInternalServerError {
				t.Errorf("the first try of %s was answered %d", d.ID, d.Status)
			}
		}
	}
	for order, ids := range events {
		for k := 1; k < len(ids); k++ {
			if prev, ok := accepted[ids[k-1]]; !ok || first[ids[k]] < prev {
				t.Errorf("order %s: event %s was first tried before %s was accepted", order, ids[k], ids[k-1])
			}
		}
	}
	for status, want := range map[string]int{"delivered": 3 * orders} {
		for _, w := range []outbox.Webhook{fw, hw} {
			if got := deliveries(t, hooks, w.ID)[status]; len(got) != want {
				t.Errorf("endpoint %d: %d deliveries %s, want %d", w.ID, len(got), status, want)
			}
		}
	}
	for _, d := range deliveries(t, hooks, fw.ID)["delivered"] {
		if d.Attempts != 2 || d.LastStatusCode == nil || *d.LastStatusCode != http.StatusNoContent || d.DeliveredAt == nil {
			t.Errorf("flaky endpoint's delivery %+v: want 2 attempts, last 204", d)
		}
	}
}

// An endpoint that answers 410 is disabled: its pending deliveries are given up and it
// gets nothing more, while another endpoint goes on getting every event. An endpoint
// that never answers 2xx has each delivery given up after the schedule's last try.
func TestGoneDisablesAndGivingUp(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	gone, failing, healthy := testutil.StartReceiver(t), testutil.StartReceiver(t), testutil.StartReceiver(t)
	gone.Answer = func(d testutil.Received, _ int) int {
		if d.Subject == "order-gone" {
			return http.StatusGone
		}
		return http.StatusOK
	}
	failing.Answer = func(testutil.Received, int) int { return http.StatusServiceUnavailable }
	gw, fw, _ := subscribe(t, hooks, gone), subscribe(t, hooks, failing, outbox.OrderCreated), subscribe(t, hooks, healthy)
	run(t, db, 1, true, nil)

	record(t, db, orderEvent(outbox.OrderCreated, "order-a"), orderEvent(outbox.OrderPaid, "order-a"))
	waitFor(t, "two events at the endpoint that will go", func() bool { return len(gone.Accepted()) == 2 })
	// Its next event waits behind the one answered 410, and is given up with it (both
	// written in one transaction, so both are fanned out before the 410).
	if err := db.Transaction(func(tx *gorm.DB) error {
		return outbox.Record(tx, orderEvent(outbox.OrderCreated, "order-gone"), orderEvent(outbox.OrderPaid, "order-gone"))
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the 410 recorded", func() bool {
		list, err := hooks.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range list {
			if w.ID == gw.ID {
				return w.DisabledAt != nil
			}
		}
		return false
	})
	record(t, db, orderEvent(outbox.OrderCreated, "order-b"), orderEvent(outbox.OrderCancelled, "order-a"))
	waitFor(t, "the healthy endpoint's six events", func() bool { return len(healthy.Accepted()) == 6 })
	waitFor(t, "the failing endpoint's three deliveries given up", func() bool {
		return len(deliveries(t, hooks, fw.ID)["failed"]) == 3 // order.created only: a, gone, b
	})
	// A quiet period in which the disabled endpoint may get nothing more: the behaviour under
	// test.
	time.Sleep(300 * time.Millisecond)
	if n := len(gone.Deliveries()); n != 3 {
		t.Errorf("the disabled endpoint got %d deliveries, want 3 (nothing after its 410)", n)
	}
	list, err := hooks.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range list {
		if (w.ID == gw.ID) != (w.DisabledAt != nil) {
			t.Errorf("endpoint %d: disabled_at %v (only %d answered 410)", w.ID, w.DisabledAt, gw.ID)
		}
		if w.Secret != "" {
			t.Errorf("the list shows endpoint %d's secret", w.ID)
		}
	}
	ds := deliveries(t, hooks, gw.ID)
	// Events written after it was disabled are not fanned out to it.
	if len(ds["delivered"]) != 2 || len(ds["failed"]) != 2 || len(ds["pending"]) != 0 {
		t.Errorf("the disabled endpoint's deliveries: %d delivered, %d failed, %d pending; want 2, 2, 0",
			len(ds["delivered"]), len(ds["failed"]), len(ds["pending"]))
	}
	for _, d := range ds["failed"] {
		if !strings.Contains(d.LastError, "the endpoint answered 410 Gone and was disabled") {
			t.Errorf("a delivery given up with the endpoint: last_error %q", d.LastError)
		}
	}
	for _, d := range deliveries(t, hooks, fw.ID)["failed"] {
		if d.Type != outbox.OrderCreated || d.Attempts != len(fast)+1 || d.LastStatusCode == nil || *d.LastStatusCode != 503 {
			t.Errorf("a given-up delivery: %+v; want order.created only, %d attempts, last 503", d, len(fast)+1)
		}
	}
	var total time.Duration
	for _, w := range outbox.DefaultBackoff {
		total += w
	}
	if total < 24*time.Hour {
		t.Errorf("the default schedule retries for %v, want at least 24 h", total)
	}
}

// A redirect is not followed (the 3xx is a failed attempt) and an endpoint that does not
// answer within the timeout (15 s unless a test shortens it) is tried again later, with
// the reason recorded.
func TestNoRedirectsAndTimeout(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	target := testutil.StartReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) })
	rw, err := hooks.Create(t.Context(), redirect.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	target.SetSecret(t, rw.Secret)
	sw, err := hooks.Create(t.Context(), slow.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	run(t, db, 1, true, func(d *outbox.Deliverer) { d.Timeout, d.Lease = 300*time.Millisecond, 2*time.Second })
	record(t, db, orderEvent(outbox.OrderCreated, "order-r"))

	waitFor(t, "both deliveries given up", func() bool {
		return len(deliveries(t, hooks, rw.ID)["failed"]) == 1 && len(deliveries(t, hooks, sw.ID)["failed"]) == 1
	})
	if n := len(target.Deliveries()); n != 0 {
		t.Errorf("the redirect's target got %d requests: the redirect was followed", n)
	}
	r := deliveries(t, hooks, rw.ID)["failed"][0]
	if r.LastStatusCode == nil || *r.LastStatusCode != http.StatusTemporaryRedirect || !strings.Contains(r.LastError, "redirects are not followed") {
		t.Errorf("redirected delivery: %+v", r)
	}
	s := deliveries(t, hooks, sw.ID)["failed"][0]
	if s.LastStatusCode != nil || !strings.Contains(s.LastError, "timeout") || s.Attempts != len(fast)+1 {
		t.Errorf("timed-out delivery: %+v; want no status, a timeout, %d attempts", s, len(fast)+1)
	}
	if d := outbox.NewDeliverer(db, false); d.Timeout != 15*time.Second || d.Lease <= d.Timeout {
		t.Errorf("a worker's attempts get %v with a lease of %v; want 15 s, within the lease", d.Timeout, d.Lease)
	}
}

// Webhook URLs on loopback or private addresses are refused unless allowed, and a
// delivery loop that does not allow them never connects to one, even for an endpoint
// stored before (a name that resolved elsewhere then).
func TestPrivateTargets(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	strict, open := outbox.NewWebhooks(db, false), outbox.NewWebhooks(db, true)
	for _, tc := range []struct{ url, want string }{
		{"", "url is required"},
		{"http://127.0.0.1:9/hook", "loopback or private network address"},
		{"http://localhost/hook", "loopback or private network address"},
		{"http://api.localhost/hook", "loopback or private network address"},
		{"http://10.1.2.3/hook", "loopback or private network address"},
		{"http://192.168.0.10/hook", "loopback or private network address"},
		{"http://172.16.5.4/hook", "loopback or private network address"},
		{"http://[::1]/hook", "loopback or private network address"},
		{"http://[fd00::1]/hook", "loopback or private network address"},
		{"http://169.254.169.254/latest/meta-data", "loopback or private network address"},
		{"http://100.64.0.1/hook", "loopback or private network address"},
		{"http://0.0.0.0/hook", "loopback or private network address"},
		{"http://198.18.0.1/hook", "loopback or private network address"},
		{"http://240.0.0.1/hook", "loopback or private network address"},
		{"http://[::ffff:127.0.0.1]/hook", "loopback or private network address"},
		{"http://[64:ff9b::a00:1]/hook", "loopback or private network address"},
		{"http://[2002:a00:1::1]/hook", "loopback or private network address"},
		{"ftp://example.com/hook", "absolute http or https URL"},
		{"/relative", "absolute http or https URL"},
		{"https://user:pw@example.com/hook", "user or password"},
		{"https://example.com/" + strings.Repeat("a", 2048), "at most 2048 bytes"},
	} {
		_, err := strict.Create(t.Context(), tc.url, nil)
		var fe *outbox.FieldError
		if !errors.As(err, &fe) || !strings.Contains(fe.Error(), tc.want) {
			t.Errorf("%.60q: %v, want a field error with %q", tc.url, err, tc.want)
		}
	}
	for _, events := range [][]string{{}, {"order.shipped"}} {
		if _, err := open.Create(t.Context(), "https://shop.example/hook", events); err == nil {
			t.Errorf("events %q accepted", events)
		}
	}
	w, err := open.Create(t.Context(), "http://127.0.0.1:9/hook", []string{outbox.OrderPaid, outbox.OrderCreated, outbox.OrderPaid})
	if err != nil || strings.Join(w.Events, ",") != "order.created,order.paid" || !strings.HasPrefix(w.Secret, "whsec_") {
		t.Fatalf("a private address where allowed: %+v, %v", w, err)
	}
	if err := strict.Delete(t.Context(), w.ID); err != nil {
		t.Fatal(err)
	}
	if err := strict.Delete(t.Context(), w.ID); !errors.Is(err, outbox.ErrNotFound) {
		t.Errorf("deleted twice: %v, want ErrNotFound", err)
	}

	r := testutil.StartReceiver(t)
	stored := subscribe(t, open, r)
	run(t, db, 1, false, nil)
	record(t, db, orderEvent(outbox.OrderCreated, "order-p"))
	waitFor(t, "the delivery given up", func() bool { return len(deliveries(t, open, stored.ID)["failed"]) == 1 })
	if n := len(r.Deliveries()); n != 0 {
		t.Errorf("the loopback endpoint got %d requests from a loop that refuses private targets", n)
	}
	if d := deliveries(t, open, stored.ID)["failed"][0]; !strings.Contains(d.LastError, "loopback or private network address") {
		t.Errorf("last_error %q does not say why", d.LastError)
	}
}

// Attempts claimed ahead that wait for a sender past the point where they could still
// end within their lease are handed back, not made late: with two loops of one sender
// each against an endpoint that never answers, no two attempts of one event overlap,
// and none is tried more often than the schedule says.
func TestAttemptsNeverOverlap(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	var mu sync.Mutex
	tries := map[string]int{}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries[r.Header.Get("webhook-id")]++
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done(): // the sender's timeout
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(hang.Close)
	w, err := hooks.Create(t.Context(), hang.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The attempts as the senders make them: from the request's start to its failure,
	// or to its answer's body closed. (The server notices a closed connection late on
	// a busy machine, so its own view of an attempt's end lags.)
	sent := &attempts{spans: map[string][]span{}}
	run(t, db, 2, true, func(d *outbox.Deliverer) {
		d.Senders, d.Timeout, d.Lease = 1, 200*time.Millisecond, 500*time.Millisecond
		d.WrapTransport(sent.watch)
	})
	const events = 8
	for i := range events {
		record(t, db, orderEvent(outbox.OrderCreated, fmt.Sprintf("order-h%d", i)))
	}
	waitFor(t, "every delivery given up", func() bool { return len(deliveries(t, hooks, w.ID)["failed"]) == events })
	mu.Lock()
	defer mu.Unlock()
	for id, n := range tries {
		// At most the schedule's tries (a late attempt handed back after its lease ran
		// out, when recording lags, uses up its number: fewer, never more).
		if n < 1 || n > len(fast)+1 {
			t.Errorf("event %s tried %d times, want 1 to %d", id, n, len(fast)+1)
		}
	}
	if len(tries) != events {
		t.Errorf("%d events reached the endpoint, want %d", len(tries), events)
	}
	sent.mu.Lock()
	defer sent.mu.Unlock()
	for id, ss := range sent.spans {
		for i := range ss {
			for j := range i {
				if ss[i].start.Before(ss[j].end) && ss[j].start.Before(ss[i].end) {
					t.Errorf("event %s: attempts %v and %v overlap", id, ss[j], ss[i])
				}
			}
		}
	}
	if len(sent.spans) != events {
		t.Errorf("%d events were sent, want %d", len(sent.spans), events)
	}
}

type span struct{ start, end time.Time }

// attempts records, by webhook-id, when each request a sender made was in flight.
type attempts struct {
	mu    sync.Mutex
	spans map[string][]span
}

func (a *attempts) watch(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		id, start := req.Header.Get("webhook-id"), time.Now()
		resp, err := next.RoundTrip(req)
		if err != nil {
			a.add(id, start)
			return nil, err
		}
		resp.Body = &onClose{ReadCloser: resp.Body, close: func() { a.add(id, start) }}
		return resp, nil
	})
}

func (a *attempts) add(id string, start time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.spans[id] = append(a.spans[id], span{start, time.Now()})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// onClose runs close once the body is closed.
type onClose struct {
	io.ReadCloser
	close func()
	once  sync.Once
}

func (b *onClose) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.close)
	return err
}

// A delivery whose last try was claimed and never recorded (its worker killed mid-try,
// or recording late past the lease) is given up when the lease runs out, not tried once
// more than the schedule says; the order's next event then goes out.
func TestUnrecordedLastTryGivesUp(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	r := testutil.StartReceiver(t)
	w := subscribe(t, hooks, r)
	record(t, db, orderEvent(outbox.OrderCreated, "order-u"), orderEvent(outbox.OrderPaid, "order-u"))
	if _, err := outbox.NewDeliverer(db, true).FanOut(t.Context()); err != nil {
		t.Fatal(err)
	}
	// What a worker leaves when it dies during the created event's last try.
	leased := time.Now().UTC().Add(-2 * time.Second)
	if err := db.Exec("UPDATE webhook_deliveries d JOIN outbox_events e ON e.seq = d.event_seq "+
		"SET d.attempts = ?, d.last_attempt_at = ?, d.next_attempt_at = ? WHERE d.webhook_id = ? AND e.type = ?",
		len(fast)+1, leased, leased.Add(time.Second), w.ID, outbox.OrderCreated).Error; err != nil {
		t.Fatal(err)
	}
	run(t, db, 1, true, nil)
	waitFor(t, "both deliveries done", func() bool {
		d := deliveries(t, hooks, w.ID)
		return len(d["delivered"])+len(d["failed"]) == 2
	})
	failed := deliveries(t, hooks, w.ID)["failed"]
	if len(failed) != 1 || failed[0].Type != outbox.OrderCreated || failed[0].Attempts != len(fast)+1 ||
		!strings.Contains(failed[0].LastError, "not recorded") {
		t.Errorf("given up: %+v; want the created event, %d attempts, its last not recorded", failed, len(fast)+1)
	}
	var got []string
	for _, d := range r.Deliveries() {
		got = append(got, d.Type)
	}
	if len(got) != 1 || got[0] != outbox.OrderPaid {
		t.Errorf("the endpoint got %q; want only the paid event", got)
	}
}

// Prune removes what is done and old, and nothing still waiting: deliveries done more
// than Keep ago, a deleted endpoint's deliveries and then the endpoint, and the events no
// delivery names any more; a pending delivery keeps itself and its event.
func TestPrune(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	healthy, deleted, failing := testutil.StartReceiver(t), testutil.StartReceiver(t), testutil.StartReceiver(t)
	failing.Answer = func(testutil.Received, int) int { return http.StatusServiceUnavailable }
	hw, dw, fw := subscribe(t, hooks, healthy), subscribe(t, hooks, deleted), subscribe(t, hooks, failing)
	run(t, db, 1, true, func(d *outbox.Deliverer) { d.Backoff = []time.Duration{time.Hour} })
	record(t, db, orderEvent(outbox.OrderCreated, "order-1"), orderEvent(outbox.OrderCreated, "order-2"))
	waitFor(t, "the deliveries recorded", func() bool { // recorded, not only received
		tried := 0
		for _, d := range deliveries(t, hooks, fw.ID)["pending"] {
			if d.LastStatusCode != nil {
				tried++
			}
		}
		return len(deliveries(t, hooks, hw.ID)["delivered"]) == 2 && len(deliveries(t, hooks, dw.ID)["delivered"]) == 2 && tried == 2
	})
	if err := hooks.Delete(t.Context(), dw.ID); err != nil {
		t.Fatal(err)
	}
	count := func(table string) int64 {
		var n int64
		if err := db.Table(table).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	prune := func(at time.Time, want int64) {
		t.Helper()
		p := outbox.NewDeliverer(db, true)
		p.SetClock(func() time.Time { return at })
		if n, err := p.Prune(t.Context(), 1000); err != nil || n != want {
			t.Errorf("prune at %v: %d rows, %v; want %d", at, n, err, want)
		}
	}
	prune(time.Now(), 3) // the deleted endpoint's 2 deliveries, then the endpoint
	if got := deliveries(t, hooks, hw.ID)["delivered"]; len(got) != 2 {
		t.Errorf("recent deliveries pruned: %d left of 2", len(got))
	}
	later := time.Now().Add(outbox.Keep + time.Hour)
	prune(later, 2) // the healthy endpoint's 2 deliveries; the events wait for the pending ones
	if got := deliveries(t, hooks, fw.ID)["pending"]; len(got) != 2 {
		t.Errorf("pending deliveries: %d, want 2 kept", len(got))
	}
	if w, e := count("webhooks"), count("outbox_events"); w != 2 || e != 2 {
		t.Errorf("%d endpoints and %d events left, want 2 and 2", w, e)
	}
	if err := hooks.Delete(t.Context(), fw.ID); err != nil {
		t.Fatal(err)
	}
	prune(later, 5) // its 2 deliveries, the endpoint, then both events
	if d, e := count("webhook_deliveries"), count("outbox_events"); d != 0 || e != 0 {
		t.Errorf("%d deliveries and %d events left, want none", d, e)
	}
}

// An event is written only when an enabled endpoint subscribes to its type: with none,
// a change leaves no row.
func TestRecordOnlyWhatIsSubscribed(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	stored := func() []string {
		var types []string
		if err := db.Raw("SELECT type FROM outbox_events ORDER BY seq").Scan(&types).Error; err != nil {
			t.Fatal(err)
		}
		return types
	}
	all := []outbox.Event{orderEvent(outbox.OrderCreated, "o1"), orderEvent(outbox.OrderPaid, "o1"), orderEvent(outbox.OrderCancelled, "o2")}
	record(t, db, all...)
	if got := stored(); len(got) != 0 {
		t.Errorf("with no endpoint, stored %v", got)
	}
	paid, err := hooks.Create(t.Context(), "http://127.0.0.1:9/paid", []string{outbox.OrderPaid})
	if err != nil {
		t.Fatal(err)
	}
	record(t, db, all...)
	if got := strings.Join(stored(), " "); got != "order.paid" {
		t.Errorf("with an endpoint of order.paid, stored %q", got)
	}
	if _, err := hooks.Create(t.Context(), "http://127.0.0.1:9/cancelled", []string{outbox.OrderCancelled}); err != nil {
		t.Fatal(err)
	}
	if err := hooks.Delete(t.Context(), paid.ID); err != nil {
		t.Fatal(err)
	}
	record(t, db, all...)
	if got := strings.Join(stored(), " "); got != "order.paid order.cancelled" {
		t.Errorf("after the order.paid endpoint left and an order.cancelled one came, stored %q", got)
	}
}

// The worker's metrics count attempts by outcome and observe, for each delivery, the
// time from the change to its 2xx: an endpoint refusing the first try (a retry, then
// delivered), one answering 410 (disabled) and one never answering 2xx (two retries,
// then given up).
func TestMetrics(t *testing.T) {
	db := testutil.MySQL(t).Gorm
	hooks := outbox.NewWebhooks(db, true)
	flaky, gone, failing := testutil.StartReceiver(t), testutil.StartReceiver(t), testutil.StartReceiver(t)
	flaky.Answer = func(_ testutil.Received, n int) int {
		if n == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}
	gone.Answer = func(testutil.Received, int) int { return http.StatusGone }
	failing.Answer = func(testutil.Received, int) int { return http.StatusServiceUnavailable }
	subscribe(t, hooks, flaky)
	subscribe(t, hooks, gone)
	fw := subscribe(t, hooks, failing)
	reg := prometheus.NewRegistry()
	run(t, db, 1, true, func(d *outbox.Deliverer) { d.Register(reg) })
	changed := time.Now()
	record(t, db, outbox.Event{Type: outbox.OrderCreated, Subject: "order-m", At: changed,
		Data: map[string]any{"order": map[string]any{"id": "order-m"}}})

	want := map[string]float64{"delivered": 1, "retry": float64(1 + len(fast)), "disabled": 1, "gave_up": 1}
	var got map[string]float64
	var lags uint64
	var lagSum float64
	waitFor(t, "the attempts counted", func() bool {
		got, lags, lagSum = webhookMetrics(t, reg)
		return len(deliveries(t, hooks, fw.ID)["failed"]) == 1 && got["gave_up"] == 1
	})
	// A quiet period in which nothing more may be counted: the behaviour under test.
	time.Sleep(200 * time.Millisecond)
	got, lags, lagSum = webhookMetrics(t, reg)
	if !maps.Equal(got, want) {
		t.Errorf("seckill_webhook_deliveries_total by outcome: %v, want %v", got, want)
	}
	// One delivery, made after a refused try and the schedule's first wait: its lag runs
	// from the change, not from the attempt that succeeded.
	if lags != 1 || lagSum < fast[0].Seconds() || lagSum > time.Since(changed).Seconds() {
		t.Errorf("seckill_webhook_delivery_lag_seconds: %d observations, sum %.3f s; want 1, between %v and %v",
			lags, lagSum, fast[0], time.Since(changed))
	}
}

// webhookMetrics reads the delivery loop's metrics from reg: the attempts by outcome,
// and the lag histogram's count and sum.
func webhookMetrics(t *testing.T, reg *prometheus.Registry) (map[string]float64, uint64, float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	outcomes := map[string]float64{}
	var count uint64
	var sum float64
	for _, f := range families {
		for _, m := range f.GetMetric() {
			switch f.GetName() {
			case "seckill_webhook_deliveries_total":
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" && m.GetCounter().GetValue() > 0 {
						outcomes[l.GetValue()] = m.GetCounter().GetValue()
					}
				}
			case "seckill_webhook_delivery_lag_seconds":
				count, sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	return outcomes, count, sum
}
