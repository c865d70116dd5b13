package testutil

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Receiver is a shop's webhook endpoint for tests: it checks each delivery's signature
// with the official Standard Webhooks library, records it, and answers with the status
// Answer picks (200 by default). A delivery whose signature does not verify is
// answered 400 and recorded in Invalid.
type Receiver struct {
	// URL is the endpoint's address.
	URL string
	// Answer picks the status of a delivery, given how many times its webhook-id has
	// arrived (1 for the first); nil answers 200. Set it before deliveries arrive.
	Answer func(d Received, n int) int

	mu       sync.Mutex
	verifier *standardwebhooks.Webhook
	got      []Received
	seen     map[string]int
	invalid  []string
}

// Received is one delivery a Receiver got.
type Received struct {
	// ID is the webhook-id header; Type, Subject (the order's or group's id) and
	// Body are the event's.
	ID, Type, Subject string
	Body              []byte
	// Status is what the receiver answered.
	Status int
	At     time.Time
}

// StartReceiver starts an endpoint that stops at cleanup. SetSecret must be called
// before deliveries arrive.
func StartReceiver(t testing.TB) *Receiver {
	t.Helper()
	r := &Receiver{seen: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL + "/hooks/seckill"
	return r
}

// SetSecret sets the endpoint's signing secret (whsec_...).
func (r *Receiver) SetSecret(t testing.TB, secret string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatalf("secret %q: %v", secret, err)
	}
	r.mu.Lock()
	r.verifier = wh
	r.mu.Unlock()
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	verifier := r.verifier
	r.mu.Unlock()
	if verifier == nil || verifier.Verify(body, req.Header) != nil {
		r.mu.Lock()
		r.invalid = append(r.invalid, req.Header.Get("webhook-id")+" "+string(body))
		r.mu.Unlock()
		http.Error(w, "signature does not verify", http.StatusBadRequest)
		return
	}
	var ev struct {
		ID   string `json:"id"`
		Type string `json:"type"`
		Data struct {
			Order *struct{ ID string } `json:"order"`
			Group *struct{ ID string } `json:"group"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &ev)
	d := Received{ID: req.Header.Get("webhook-id"), Type: ev.Type, Body: body, At: time.Now()}
	switch {
	case ev.Data.Order != nil:
		d.Subject = ev.Data.Order.ID
	case ev.Data.Group != nil:
		d.Subject = ev.Data.Group.ID
	}
	if ev.ID != d.ID {
		d.Type = "mismatch: body id " + ev.ID
	}
	r.mu.Lock()
	r.seen[d.ID]++
	n := r.seen[d.ID]
	r.mu.Unlock()
	d.Status = http.StatusOK
	if r.Answer != nil {
		d.Status = r.Answer(d, n)
	}
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	w.WriteHeader(d.Status)
}

// Deliveries returns every delivery received so far, in arrival order.
func (r *Receiver) Deliveries() []Received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Received(nil), r.got...)
}

// Accepted returns the deliveries answered 2xx, in arrival order.
func (r *Receiver) Accepted() []Received {
	var out []Received
	for _, d := range r.Deliveries() {
		if d.Status >= 200 && d.Status < 300 {
			out = append(out, d)
		}
	}
	return out
}

// Invalid returns the deliveries whose signature did not verify.
func (r *Receiver) Invalid() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.invalid...)
}
