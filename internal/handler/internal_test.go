package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"seckill/internal/config"
	"seckill/internal/sale"
	"seckill/internal/testutil"
)

// A bug answers 500 internal, and the body carries nothing internal.
func TestInternalErrorsHideDetails(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	h := New(Services{}, Options{JWTSecret: strings.Repeat("s", 32)})
	r := gin.New()
	r.Use(h.mw.recover)
	secret := "Error 1064: You have an error in your SQL syntax near 'password'"
	r.GET("/error", func(c *gin.Context) { respondError(c, fmt.Errorf("list: %w", errors.New(secret))) })
	r.GET("/panic", func(c *gin.Context) { panic(secret) })
	for _, path := range []string{"/error", "/panic"} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		body := w.Body.String()
		if w.Code != http.StatusInternalServerError || !strings.Contains(body, `"code":"internal"`) {
			t.Errorf("%s: got %d %s, want 500 internal", path, w.Code, body)
		}
		if strings.Contains(body, "SQL") || strings.Contains(body, "password") || strings.Contains(body, "goroutine") {
			t.Errorf("%s: body leaks internals: %s", path, body)
		}
	}
}

// The error body written by hand is what encoding/json would write, for any message.
func FuzzErrorBody(f *testing.F) {
	for _, s := range []string{"", "Sold out.", `quote " and \ back`, "line\nbreak\ttab\r", "\x00\x01\x1f",
		"<script>&amp;</script>", "\u2028\u2029", "héllo wörld 世界 😀", "bad \xff\xfe utf-8", "\xed\xa0\x80"} {
		f.Add("sold_out", s)
	}
	f.Fuzz(func(t *testing.T, code, msg string) {
		gin.SetMode(gin.ReleaseMode)
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		abort(c, http.StatusConflict, code, msg)
		type detail struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		want, err := json.Marshal(struct {
			Error detail `json:"error"`
		}{detail{code, msg}})
		if err != nil {
			t.Fatal(err)
		}
		if got := w.Body.String(); got != string(want) {
			t.Errorf("body\n got %s\nwant %s", got, want)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	})
}

// The sold-out flag's answer, written from a body worked out once, is the answer the
// mapping gives the same error by the long way.
func TestSoldOutFlaggedAnswer(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	answer := func(err error) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		respondError(c, err)
		return w
	}
	fast, long := answer(sale.ErrSoldOutFlagged), answer(fmt.Errorf("wrapped: %w", sale.ErrSoldOutFlagged))
	if fast.Code != http.StatusConflict || fast.Body.String() != long.Body.String() || fast.Code != long.Code ||
		!strings.Contains(fast.Body.String(), `"code":"sold_out"`) {
		t.Errorf("flag's answer %d %s; the mapping's %d %s; want the same 409 sold_out", fast.Code, fast.Body, long.Code, long.Body)
	}
	if ct := fast.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
}

// Every refusal of a purchase has its row in the mapping: a 4xx with a code of its own
// kind, never the 500 of an unknown error.
func TestEveryRefusalIsMapped(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	for _, refusal := range sale.Refusals() {
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		respondError(c, fmt.Errorf("reserve: %w", refusal))
		if w.Code < 400 || w.Code >= 500 || strings.Contains(w.Body.String(), `"code":"internal"`) {
			t.Errorf("%v: %d %s, want a 4xx of its own", refusal, w.Code, w.Body)
		}
	}
}

// A cluster that cannot answer for a slot now (a failover or a migration past the
// client's redirects, a slot nobody serves) is storage unreachable: 503 unavailable with
// Retry-After, not 500. Two real cluster nodes, each serving half of the slots, and a
// plain client that does not follow redirects give the errors themselves, wrapped as a
// read of the service wraps them.
func TestClusterRedirectsAreUnavailable(t *testing.T) {
	ctx := context.Background()
	a := testutil.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes-a.conf")
	b := testutil.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes-b.conf")
	ca := a.Client(t)
	if err := ca.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 8191).Err(); err != nil {
		t.Fatal(err)
	}
	unserved := ca.Get(ctx, "{b}x").Err() // slot 3300: served by nobody yet
	if err := b.Client(t).Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 8192, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(b.Addr)
	if err := ca.ClusterMeet(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	var moved error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if moved = ca.Get(ctx, "{a}x").Err(); moved != nil && strings.HasPrefix(moved.Error(), "MOVED") { // slot 15495
			break
		}
	}
	gin.SetMode(gin.ReleaseMode)
	for name, err := range map[string]error{"MOVED": moved, "CLUSTERDOWN": unserved} {
		if err == nil || !strings.HasPrefix(err.Error(), name) {
			t.Fatalf("%s from the nodes: got %v", name, err)
		}
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		respondError(c, fmt.Errorf("read units of sale 2: %w", err))
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
			!strings.Contains(w.Body.String(), `"code":"unavailable"`) {
			t.Errorf("%s: %d %s, Retry-After %q; want 503 unavailable with Retry-After", name, w.Code, w.Body, w.Header().Get("Retry-After"))
		}
	}
}

// A request's MySQL transaction outlives its bound (config.MySQL: 2 s for a context
// without a deadline): database/sql ends it, and the statement after that is storage
// unreachable, 503 unavailable with Retry-After, not 500.
func TestMySQLTransactionPastItsBoundIsUnavailable(t *testing.T) {
	db, err := config.Config{MySQLDSN: testutil.MySQL(t).DSN}.MySQL()
	if err != nil {
		t.Fatal(err)
	}
	if sqlDB, err := db.DB(); err == nil {
		t.Cleanup(func() { sqlDB.Close() })
	}
	err = db.WithContext(context.Background()).Transaction(func(tx *gorm.DB) error {
		// A transaction that outlasts its bound: the behaviour under test.
		time.Sleep(2500 * time.Millisecond)
		return tx.Exec("SELECT 1").Error
	})
	if err == nil {
		t.Fatal("a transaction past its bound succeeded")
	}
	gin.SetMode(gin.ReleaseMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	respondError(c, fmt.Errorf("pay order: %w", err))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"unavailable"`) {
		t.Errorf("%v: %d %s (Retry-After %q), want 503 unavailable with Retry-After", err, w.Code, w.Body, w.Header().Get("Retry-After"))
	}
}
