package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"seckill/internal/auth"
	buyerid "seckill/internal/buyer"
)

// api talks to one or more API processes, round-robin, over keep-alive connections.
type api struct {
	urls   []string
	next   atomic.Uint64
	http   *http.Client
	secret string
	// forwardFor sends each buyer's requests with an X-Forwarded-For address of its own
	// (forwardedFor), as a balancer in front would: for an API that trusts this tool's
	// address (SECKILL_TRUSTED_PROXIES), so its per-IP limit sees a crowd of addresses.
	forwardFor bool
	// origin, when set, is the Origin header of every request: the crowd as a shop's
	// pages on another origin (SECKILL_CORS_ORIGINS) would send it.
	origin string
	// otherSubjects is the share of buyers whose subject is not their user id but what an
	// identity provider names them (subject).
	otherSubjects float64
}

// newAPI returns a client for the base URLs whose pool keeps conns idle connections per
// instance, so a crowd of conns goroutines never opens a connection twice.
func newAPI(urls []string, conns int, timeout time.Duration, secret string) *api {
	tr := &http.Transport{
		Proxy:                 nil, // load goes to the given addresses, never through a proxy
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          2 * conns * len(urls),
		MaxIdleConnsPerHost:   2 * conns,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
	return &api{urls: urls, http: &http.Client{Transport: tr, Timeout: timeout}, secret: secret}
}

// base returns the next instance's base URL.
func (a *api) base() string {
	if len(a.urls) == 1 {
		return a.urls[0]
	}
	return a.urls[(a.next.Add(1)-1)%uint64(len(a.urls))]
}

// token signs a token for the subject, valid for a day.
func (a *api) token(subject string, admin bool) (string, error) {
	return auth.Sign(a.secret, buyerid.ID(subject), admin, 24*time.Hour, time.Now())
}

// subject is the subject of buyer number n: for an otherSubjects share of the buyers
// (picked by a hash of n) what an identity provider names them, a UUID (Okta, Keycloak,
// Cognito) or an Auth0 subject, in turns; for the others the decimal user id n. Each
// number has its own subject, so the audit holds each buyer to the limit alone.
func (a *api) subject(n int64) string {
	h := fnv.New64a()
	_, _ = h.Write(strconv.AppendInt(nil, n, 10))
	x := h.Sum64()
	switch {
	case float64(x%1000) >= a.otherSubjects*1000:
		return strconv.FormatInt(n, 10)
	case x/1000%2 == 0:
		return fmt.Sprintf("7c9e6679-7425-40de-%04x-%012x", 0x8000|(uint64(n)>>48)&0xfff, uint64(n)&0xffffffffffff)
	}
	return fmt.Sprintf("auth0|%024x", n)
}

// buyerToken signs a token for buyer number n (subject).
func (a *api) buyerToken(n int64) (string, error) { return a.token(a.subject(n), false) }

// tokens signs tokens for buyers first..first+n-1.
func (a *api) tokens(first int64, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		t, err := a.buyerToken(first + int64(i))
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// answer is what one request got.
type answer struct {
	kind    string // what the request was, when a phase sends several kinds ("open", "join")
	status  int    // 0 when the request got no answer
	code    string // the error body's code, "" on success
	body    []byte
	err     error // transport error or timeout
	latency time.Duration
}

// label names an answer in the tallies: "202", "409 sold_out", "no answer", prefixed
// with its kind when it has one: "join 409 group_full".
func (r answer) label() string {
	var l string
	switch {
	case r.err != nil:
		l = "no answer"
	case r.code != "":
		l = strconv.Itoa(r.status) + " " + r.code
	default:
		l = strconv.Itoa(r.status)
	}
	if r.kind != "" {
		return r.kind + " " + l
	}
	return l
}

type errorBody struct {
	Error struct {
		Code string `json:"code"`
	} `json:"error"`
}

// do sends one request to the next instance. token and key may be "".
func (a *api) do(ctx context.Context, method, path, token, key string, body []byte) answer {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base()+path, rd)
	if err != nil {
		return answer{err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
		if a.forwardFor {
			req.Header.Set("X-Forwarded-For", forwardedFor(token))
		}
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if a.origin != "" {
		req.Header.Set("Origin", a.origin)
	}
	start := time.Now()
	resp, err := a.http.Do(req)
	if err != nil {
		return answer{err: err, latency: time.Since(start)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	r := answer{status: resp.StatusCode, body: b, latency: time.Since(start)}
	if err != nil {
		r.status, r.err = 0, err
		return r
	}
	if resp.StatusCode >= 300 {
		r.code = errorCode(b)
	}
	return r
}

// errorCode is the code of the contract's error body b, "?" when b is none. The API
// writes the code first, so it is read without encoding/json, which would cost this
// tool, on the same cores as the API, more per error answer than per success and tilt
// the ratios; any other spelling is decoded.
func errorCode(b []byte) string {
	const head = `{"error":{"code":"`
	if rest, ok := bytes.CutPrefix(b, []byte(head)); ok {
		if i := bytes.IndexByte(rest, '"'); i > 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return string(rest[:i])
		}
	}
	var e errorBody
	if json.Unmarshal(b, &e) == nil && e.Error.Code != "" {
		return e.Error.Code
	}
	return "?"
}

// forwardedFor is a client address in 10.0.0.0/8 that stands for the buyer whose token
// this is: the same buyer, the same address.
func forwardedFor(token string) string {
	h := fnv.New32a()
	h.Write([]byte(token))
	n := h.Sum32()
	b := make([]byte, 0, 16)
	b = append(b, "10."...)
	b = strconv.AppendUint(b, uint64(n>>16&0xff), 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(n>>8&0xff), 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, uint64(n&0xff), 10)
	return string(b)
}

// order is the part of the contract's order object the tool reads.
type order struct {
	ID         string `json:"id"`
	ActivityID int64  `json:"activity_id"`
	Buyer      string `json:"buyer"`
	Quantity   int    `json:"quantity"`
	Status     string `json:"status"`
	GroupID    string `json:"group_id"` // "" outside group-buy sales
}

// buy posts a purchase of quantity units.
func (a *api) buy(ctx context.Context, activityID int64, token, key string, quantity int) answer {
	return a.buyVariant(ctx, activityID, token, key, quantity, "")
}

// buyVariant is buy of a variant of a sale of variants ("" for none).
func (a *api) buyVariant(ctx context.Context, activityID int64, token, key string, quantity int, variant string) answer {
	body := quantityBody(quantity)
	if variant != "" {
		body, _ = json.Marshal(map[string]any{"quantity": quantity, "variant": variant})
	}
	return a.do(ctx, http.MethodPost, "/api/v1/activities/"+strconv.FormatInt(activityID, 10)+"/orders", token, key, body)
}

// quantityBodies are the bodies of purchases of 1..9 units, made once: a crowd sends
// them by the hundred thousand, and the tool shares the cores with what it measures.
var quantityBodies = func() (b [10][]byte) {
	for q := range b {
		b[q] = fmt.Appendf(nil, `{"quantity":%d}`, q)
	}
	return b
}()

// quantityBody is the body of a purchase of quantity units. The caller does not change it.
func quantityBody(quantity int) []byte {
	if quantity >= 0 && quantity < len(quantityBodies) {
		return quantityBodies[quantity]
	}
	return fmt.Appendf(nil, `{"quantity":%d}`, quantity)
}

// saleSpec is a sale to create.
type saleSpec struct {
	Name         string `json:"name"`
	ProductName  string `json:"product_name"`
	PriceCents   int64  `json:"price_cents"`
	Stock        int64  `json:"stock,omitempty"` // 0: a sale of Variants
	PerUserLimit int    `json:"per_user_limit"`
	StartsAt     string `json:"starts_at"`
	EndsAt       string `json:"ends_at"`
	// A group-buy sale: Kind "group" and its group settings; empty for a plain sale.
	Kind                  string `json:"kind,omitempty"`
	GroupSize             int    `json:"group_size,omitempty"`
	GroupWindowSeconds    int    `json:"group_window_seconds,omitempty"`
	PerUserParticipations int    `json:"per_user_participations,omitempty"`
	PayWindowSeconds      int    `json:"pay_window_seconds,omitempty"` // 0: the default
	StockBuckets          int    `json:"stock_buckets,omitempty"`      // 0: one
	// Variants, instead of Stock, make a sale of variants.
	Variants []variantSpec `json:"variants,omitempty"`
}

// variantSpec is one variant of a sale to create.
type variantSpec struct {
	Name  string `json:"name"`
	Stock int64  `json:"stock"`
}

// variantSpecs splits stock over n variants named V0, V1, ..., as evenly as it goes.
func variantSpecs(stock int64, n int) []variantSpec {
	out := make([]variantSpec, n)
	for i := range out {
		out[i] = variantSpec{Name: fmt.Sprintf("V%d", i), Stock: stock / int64(n)}
		if int64(i) < stock%int64(n) {
			out[i].Stock++
		}
	}
	return out
}

// createSale creates a sale that is on from a second ago for an hour, and returns its id.
func (a *api) createSale(ctx context.Context, name string, stock int64, limit int) (int64, error) {
	return a.create(ctx, saleSpec{Name: name, Stock: stock, PerUserLimit: limit})
}

// create creates the sale spec describes, with its product, price and times filled in
// as createSale's, and returns its id.
func (a *api) create(ctx context.Context, spec saleSpec) (int64, error) {
	admin, err := a.token("1", true)
	if err != nil {
		return 0, err
	}
	now := time.Now().UTC()
	spec.ProductName, spec.PriceCents = "load-test unit", 100
	spec.StartsAt, spec.EndsAt = now.Add(-time.Second).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339)
	body, _ := json.Marshal(spec)
	r := a.do(ctx, http.MethodPost, "/api/v1/admin/activities", admin, "", body)
	if r.err != nil || r.status != http.StatusCreated {
		return 0, fmt.Errorf("create sale: %s %s", r.label(), bytes.TrimSpace(r.body))
	}
	var got struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || got.ID <= 0 {
		return 0, fmt.Errorf("create sale: unexpected body %s", r.body)
	}
	return got.ID, nil
}

// waitHealthy waits until every instance answers GET /healthz.
func (a *api) waitHealthy(ctx context.Context) error {
	for _, u := range a.urls {
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u+"/healthz", nil)
			resp, err := a.http.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s does not answer /healthz: %v", u, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// tally counts answers by label, with the latency, the label and the time (Unix ns) of
// each answer, so a run's record can draw them over time (series.go).
type tally struct {
	counts    map[string]int
	latencies []time.Duration
	labels    []string
	ends      []int64
}

func newTally() *tally { return &tally{counts: map[string]int{}} }

func (t *tally) add(r answer) {
	l := r.label()
	t.counts[l]++
	t.latencies = append(t.latencies, r.latency)
	t.labels = append(t.labels, l)
	t.ends = append(t.ends, time.Now().UnixNano())
}

func (t *tally) merge(o *tally) {
	for k, v := range o.counts {
		t.counts[k] += v
	}
	t.latencies = append(t.latencies, o.latencies...)
	t.labels = append(t.labels, o.labels...)
	t.ends = append(t.ends, o.ends...)
}

func (t *tally) total() int { return len(t.latencies) }

// percentile returns the p-th percentile (0..100) of the latencies, nearest rank.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p/100*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// summary is "p50 x p99 y max z" of the tally's latencies.
func (t *tally) percentiles() (p50, p99, worst time.Duration) {
	s := slices.Clone(t.latencies)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	return percentile(s, 50), percentile(s, 99), s[len(s)-1]
}

// breakdown lists the counts, most frequent first: "202: 9000, 409 sold_out: 12".
func (t *tally) breakdown() string {
	keys := make([]string, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if t.counts[a] != t.counts[b] {
			return t.counts[b] - t.counts[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, t.counts[k])
	}
	return strings.Join(parts, ", ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
