package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/accesscode"
	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/config"
	"seckill/internal/handler"
	"seckill/internal/health"
	"seckill/internal/order"
	"seckill/internal/outage"
	"seckill/internal/outbox"
	"seckill/internal/sale"
	stockcodes "seckill/internal/stock/codes"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/task"
	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
	"seckill/internal/worker"
	"seckill/lock"
)

// clock is a settable clock for the service; the HTTP layer keeps real time.
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// stack is the API in-process over a private Redis and a fresh database, with an
// in-process asynq worker writing orders to MySQL.
type stack struct {
	t   testing.TB
	url string
	// metricsURL is the operations port's /metrics, as cmd/api serves it, with the
	// service's collectors; db is the MySQL every handler uses.
	metricsURL string
	db         *gorm.DB
	routes     http.Handler // the handler of url
	redis      *testutil.RedisServer
	rdb        redis.UniversalClient
	svc        *sale.Service
	clock      *clock
	line       *waitingroom.Rooms
	codes      *accesscode.Codes
}

func newStack(t testing.TB, o handler.Options) *stack {
	t.Helper()
	srv := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb := config.Config{RedisAddrs: []string{srv.Addr}}.Redis() // the service's own client settings
	t.Cleanup(func() { _ = rdb.Close() })
	db := testutil.MySQL(t)
	st, sk := store.New(db.Gorm, sale.EventViews{}), stocktest.New(rdb)
	locks := lock.New(rdb)
	t.Cleanup(func() { _ = locks.Close() })
	c := &clock{}
	outages := outage.NewRecord(rdb)
	orders := order.New(st.Lifecycle, st.Activities, sk.Stock, outages)
	orders.Offers = task.NewEnqueuer(asynq.NewClientFromRedisClient(rdb)) // as cmd/api
	svc := sale.New(st, sk.Stock, orders, outages, task.NewEnqueuer(asynq.NewClientFromRedisClient(rdb)), locks)
	svc.SetClock(c.Now)
	svc.LockWait = 100 * time.Millisecond
	svc.UserRate = o.RateUser // as cmd/api: purchases that reach Redis are limited there
	codes := accesscode.New(db.Gorm, st.Activities, stockcodes.New(sk.Stock))
	codes.SetClock(c.Now)
	svc.SetCodes(codes)
	if o.Codes == nil {
		o.Codes = codes
	}

	persister := worker.NewPersister(st.Batches, st.Orders, st.Activities, sk.Stock, outages, 100)
	w := asynq.NewServerFromRedisClient(rdb, asynq.Config{Concurrency: 4, Queues: map[string]int{task.Queue: 1},
		TaskCheckInterval: 20 * time.Millisecond, LogLevel: asynq.FatalLevel})
	mux := asynq.NewServeMux()
	mux.HandleFunc(task.TypePersist, persister.HandleTask)
	if err := w.Start(mux); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Shutdown)

	o.JWTSecret = testutil.JWTSecret
	o.Passes = auth.NewPasses(testutil.JWTSecret)
	l := waitingroom.New(rdb, o.Passes, altcha.New(auth.DeriveKey(testutil.JWTSecret, "altcha")))
	l.SetClock(c.Now)
	o.Rooms = l
	if o.Webhooks == nil {
		o.Webhooks = outbox.NewWebhooks(db.Gorm, false) // as outside dev mode
	}
	if o.Ready == nil { // as cmd/api: Redis needed, MySQL reported
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		sqlDB, err := db.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		o.Ready = health.NewProbe([]*health.Check{health.Watch(ctx, "redis", sk.Ping)}, health.Watch(ctx, "mysql", sqlDB.PingContext))
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	svc.Register(o.Registry)
	ops := httptest.NewServer(health.Operations(o.Registry, false))
	t.Cleanup(ops.Close)
	routes := handler.New(services(svc), o).Routes()
	ts := httptest.NewServer(routes)
	t.Cleanup(ts.Close)
	return &stack{t: t, url: ts.URL, metricsURL: ops.URL + "/metrics", db: db.Gorm, routes: routes, redis: srv, rdb: rdb, svc: svc,
		clock: c, line: l, codes: codes}
}

// services are the handler's services: svc's parts, as cmd/api gives them.
func services(svc *sale.Service) handler.Services {
	return handler.Services{Catalog: svc.Catalog, Purchases: svc.Purchases, Groups: svc.Groups, Orders: svc.Orders,
		Waitlists: svc.Waitlists}
}

// on returns s for a goroutine other than the test's: its helpers' Fatal goes to g,
// which reports to the test.
func (s *stack) on(g *testutil.Goroutines) *stack {
	cp := *s
	cp.t = g
	return &cp
}

// sale creates a sale directly through the service.
func (s *stack) sale(stockUnits int64, limit int, starts, ends time.Time) int64 {
	s.t.Helper()
	a, err := s.svc.Catalog.CreateActivity(context.Background(), sale.NewActivity{Name: "s", ProductName: "p",
		PriceCents: 250, Stock: stockUnits, PerUserLimit: limit, StartsAt: starts, EndsAt: ends, PayWindowSeconds: 60})
	if err != nil {
		s.t.Fatal(err)
	}
	return a.ID
}

type call struct {
	method, path, token, body string
	header                    map[string]string
	// repeated are headers sent with several values (a header sent twice).
	repeated http.Header
	// chunked sends the body without a Content-Length.
	chunked bool
}

type answer struct {
	status int
	body   string
	header http.Header
}

// answerAsIs is the tests' client: it follows no redirect, so a test reads the API's
// own answer.
var answerAsIs = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (s *stack) do(c call) answer {
	s.t.Helper()
	var body io.Reader = strings.NewReader(c.body)
	if c.chunked {
		body = io.MultiReader(body) // a reader of unknown length: Transfer-Encoding: chunked
	}
	req, _ := http.NewRequest(c.method, s.url+c.path, body)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	for k, vs := range c.repeated {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := answerAsIs.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b), resp.Header}
}

// waitCreated waits until the worker has written the order.
func (s *stack) waitCreated(id, token string) {
	s.t.Helper()
	for i := 0; i < 500; i++ { // the in-process worker writes it within milliseconds
		if a := s.do(call{method: "GET", path: "/api/v1/orders/" + id, token: token}); strings.Contains(a.body, `"status":"created"`) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("order %s never reached created", id)
}

// bodyOf is body as JSON with some fields replaced (a nil value drops the field).
func bodyOf(body, replace map[string]any) string {
	for k, v := range replace {
		if v == nil {
			delete(body, k)
		} else {
			body[k] = v
		}
	}
	b, _ := json.Marshal(body)
	return string(b)
}

func orderID(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `"id":"`)
	if i < 0 {
		t.Fatalf("no order id in %s", body)
	}
	rest := body[i+6:]
	return rest[:strings.Index(rest, `"`)]
}

func wantError(t *testing.T, a answer, status int, code string) {
	t.Helper()
	if a.status != status || !strings.Contains(a.body, fmt.Sprintf(`"code":"%s"`, code)) ||
		!strings.Contains(a.body, `"message":"`) || !strings.HasPrefix(a.body, `{"error":{`) {
		t.Errorf("got %d %s; want %d with code %s in the contract's error body", a.status, a.body, status, code)
	}
}

// waitReady waits up to within for /readyz to answer 200 (ready) or 503 with body.
func (s *stack) waitReady(ready bool, body string, within time.Duration) {
	s.t.Helper()
	want := http.StatusServiceUnavailable
	if ready {
		want = http.StatusOK
	}
	deadline := time.Now().Add(within)
	for {
		a := s.do(call{method: "GET", path: "/readyz"})
		if a.status == want && a.body == body {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("readyz after %v: %d %s, want %d %s", within, a.status, a.body, want, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
