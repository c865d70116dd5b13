package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/handler"
	"seckill/internal/testutil"
)

// TestPassHolderPurchaseNoExtraRedisCommand: a pass holder's purchase in a waiting-room
// sale sends Redis as many commands as a purchase in a sale without a room (the pass
// is checked in the process, its expiry and the gate inside the reserve script), and
// a purchase without a pass is refused by that same script. Every command the API
// sends for a request is counted by a hook on its client, by the request's context.
func TestPassHolderPurchaseNoExtraRedisCommand(t *testing.T) {
	s := newStack(t, handler.Options{})
	s.rdb.AddHook(commandCounter{})
	now := time.Now()
	admin := testutil.Token(t, 1, true)
	create := func(room string) int64 {
		a := s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: fmt.Sprintf(
			`{"name":"n","product_name":"p","price_cents":100,"stock":10,"per_user_limit":1,"starts_at":%q,"ends_at":%q%s}`,
			now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339), room)})
		var act struct{ ID int64 }
		if a.status != http.StatusCreated || json.Unmarshal([]byte(a.body), &act) != nil {
			t.Fatalf("create a sale: %d %s", a.status, a.body)
		}
		return act.ID
	}
	warm, plain, room := create(""), create(""), create(`,"waiting_room":true,"admit_per_second":10`)
	buyer := testutil.Token(t, 42, false)
	if a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/line", room), token: buyer, body: `{}`}); a.status != http.StatusCreated {
		t.Fatalf("join: %d %s", a.status, a.body)
	}
	if _, err := s.line.Admit(context.Background(), room); err != nil {
		t.Fatal(err)
	}
	var ticket struct{ Status, Pass string }
	a := s.do(call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/line", room), token: buyer})
	if json.Unmarshal([]byte(a.body), &ticket) != nil || ticket.Status != "admitted" || ticket.Pass == "" {
		t.Fatalf("the ticket after an advance: %s", a.body)
	}
	// commands sends a purchase through the handler and returns its answer and the
	// Redis commands it sent.
	commands := func(activity int64, token string, header map[string]string) (int, int64) {
		var n atomic.Int64
		req := httptest.NewRequest("POST", fmt.Sprintf("/api/v1/activities/%d/orders", activity), strings.NewReader(`{"quantity":1}`))
		req = req.WithContext(context.WithValue(req.Context(), countKey{}, &n))
		req.Header.Set("Authorization", "Bearer "+token)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		w := httptest.NewRecorder()
		s.routes.ServeHTTP(w, req)
		return w.Code, n.Load()
	}
	commands(warm, testutil.Token(t, 41, false), nil) // the scripts loaded
	codePlain, plainCmds := commands(plain, testutil.Token(t, 43, false), map[string]string{"Idempotency-Key": "k-plain"})
	codePass, passCmds := commands(room, buyer, map[string]string{"Idempotency-Key": "k-room", handler.PassHeader: ticket.Pass})
	codeNone, noneCmds := commands(room, testutil.Token(t, 44, false), map[string]string{"Idempotency-Key": "k-none"})
	t.Logf("Redis commands per purchase: no room %d, pass holder %d, no pass (refused) %d", plainCmds, passCmds, noneCmds)
	switch {
	case codePlain != http.StatusAccepted || codePass != http.StatusAccepted || codeNone != http.StatusConflict:
		t.Fatalf("answers %d %d %d, want 202 202 409", codePlain, codePass, codeNone)
	case plainCmds == 0:
		t.Fatal("no command counted for a purchase: the hook does not see the request's commands")
	case passCmds != plainCmds:
		t.Errorf("a pass holder's purchase sent %d Redis commands, a purchase without a room %d", passCmds, plainCmds)
	case noneCmds > plainCmds:
		t.Errorf("a purchase without a pass sent %d Redis commands, more than a purchase (%d)", noneCmds, plainCmds)
	}
}

type countKey struct{}

// commandCounter counts the commands sent under a context holding a countKey.
type commandCounter struct{}

func (commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n, ok := ctx.Value(countKey{}).(*atomic.Int64); ok {
			n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if n, ok := ctx.Value(countKey{}).(*atomic.Int64); ok {
			n.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}
