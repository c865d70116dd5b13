package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"seckill/internal/handler"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/testutil"
	"seckill/internal/waitingroom"
)

// roomSale creates a sale with a waiting room through the service.
func (s *stack) roomSale(starts time.Time, rate int) int64 {
	s.t.Helper()
	on := true
	a, err := s.svc.Catalog.CreateActivity(context.Background(), sale.NewActivity{Name: "room", ProductName: "p", PriceCents: 100, Stock: 10,
		PerUserLimit: 1, StartsAt: starts, EndsAt: starts.Add(time.Hour), Room: sale.RoomPatch{WaitingRoom: &on, AdmitPerSecond: &rate}})
	if err != nil {
		s.t.Fatal(err)
	}
	return a.ID
}

// routesStack is a stack with a sale on now (plain) and one with a line (room), and a
// buyer's and an admin's tokens: what the tests of each route's answer ask for.
func routesStack(t *testing.T) (s *stack, plain, room int64, buyer, admin string) {
	t.Helper()
	s = newStack(t, handler.Options{})
	now := time.Now()
	plain = s.sale(10, 1, now.Add(-time.Minute), now.Add(time.Hour))
	room = s.roomSale(now.Add(-time.Minute), 10)
	return s, plain, room, testutil.Token(t, 42, false), testutil.Token(t, 1, true)
}

// The public reads (the list, a sale, a line's status) may be kept by a shared cache for
// a second, their 404 and 409 too; an answer to a request with a token, and every other
// route's, never.
func TestCacheControlOfEachRoute(t *testing.T) {
	s, plain, room, buyer, admin := routesStack(t)
	if a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/line", room), token: buyer, body: "{}"}); a.status != http.StatusCreated {
		t.Fatalf("join: %d %s", a.status, a.body)
	}
	const shared, private = "public, max-age=1, stale-while-revalidate=1", "private, no-store"
	for _, tc := range []struct {
		name   string
		c      call
		status int
		cache  string
		etag   bool
	}{
		{"the list", call{method: "GET", path: "/api/v1/activities"}, 200, shared, true},
		{"a page of the list", call{method: "GET", path: "/api/v1/activities?limit=1"}, 200, shared, true},
		{"a sale", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d", plain)}, 200, shared, true},
		{"a line's status", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/line/status", room)}, 200, shared, true},
		{"no such sale", call{method: "GET", path: "/api/v1/activities/987654"}, 404, shared, false},
		{"a sale's id not canonical", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/0%d", plain)}, 404, shared, false},
		{"the status of no sale", call{method: "GET", path: "/api/v1/activities/987654/line/status"}, 404, shared, false},
		{"the status of a sale without a line", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/line/status", plain)}, 409, shared, false},
		{"a bad page", call{method: "GET", path: "/api/v1/activities?limit=0"}, 400, private, false},
		{"a sale with a token", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d", plain), token: buyer}, 200, private, true},
		{"the status with a token", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/line/status", room), token: buyer}, 200, private, true},
		{"no such sale with a token", call{method: "GET", path: "/api/v1/activities/987654", token: buyer}, 404, private, false},
		{"a ticket", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/line", room), token: buyer}, 200, private, false},
		{"a challenge", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/line/challenge", room)}, 200, private, false},
		{"a purchase", call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", plain), token: buyer, body: `{"quantity":1}`}, 202, private, false},
		{"a purchase without a token", call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", plain), body: `{"quantity":1}`}, 401, private, false},
		{"the buyer's orders", call{method: "GET", path: "/api/v1/orders", token: buyer}, 200, private, false},
		{"the admin's list", call{method: "GET", path: "/api/v1/admin/activities", token: admin}, 200, private, false},
		{"a group list", call{method: "GET", path: fmt.Sprintf("/api/v1/activities/%d/groups", plain)}, 409, private, false},
		{"no such route", call{method: "GET", path: "/api/v1/nowhere"}, 404, private, false},
		{"a path with a trailing slash", call{method: "GET", path: "/api/v1/activities/"}, 404, private, false},
		{"the API's reference", call{method: "GET", path: "/api/v1/openapi.yaml"}, 200, private, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := s.do(tc.c)
			if a.status != tc.status || a.header.Get("Cache-Control") != tc.cache || (a.header.Get("ETag") != "") != tc.etag {
				t.Errorf("got %d, Cache-Control %q, ETag %q; want %d, %q, an ETag %v (%s)", a.status, a.header.Get("Cache-Control"),
					a.header.Get("ETag"), tc.status, tc.cache, tc.etag, a.body)
			}
			// For the nginx front: kept until the end of this second or the next, never for a private answer.
			accel := a.header.Get("X-Accel-Expires")
			if tc.cache == private && accel != "" {
				t.Errorf("a private answer carries X-Accel-Expires %q", accel)
			}
			if at, err := strconv.ParseInt(strings.TrimPrefix(accel, "@"), 10, 64); tc.cache == shared &&
				(!strings.HasPrefix(accel, "@") || err != nil || at < time.Now().Unix()-1 || at > time.Now().Unix()+1) {
				t.Errorf("X-Accel-Expires %q, want @ and this second or the next (now %d)", accel, time.Now().Unix())
			}
		})
	}
}

// An If-None-Match that holds the ETag gets 304 and no body, with the headers of the
// 200; one that does not, or a changed answer, gets the 200.
func TestETagNotModified(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	room := s.roomSale(now.Add(time.Minute), 10)
	for _, path := range []string{"/api/v1/activities", fmt.Sprintf("/api/v1/activities/%d", room),
		fmt.Sprintf("/api/v1/activities/%d/line/status", room)} {
		first := s.do(call{method: "GET", path: path})
		etag := first.header.Get("ETag")
		if first.status != 200 || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 10 {
			t.Fatalf("%s: %d, ETag %q: want 200 with a strong ETag", path, first.status, etag)
		}
		for _, tc := range []struct {
			inm    string
			status int
		}{
			{etag, 304},
			{"W/" + etag, 304},
			{`"other", ` + etag, 304},
			{"*", 304},
			{`"other"`, 200},
		} {
			a := s.do(call{method: "GET", path: path, header: map[string]string{"If-None-Match": tc.inm}})
			if a.header.Get("ETag") != etag && a.status == 304 || a.status == 304 && a.body != "" {
				t.Errorf("%s If-None-Match %s: %d ETag %q body %q, want the ETag %q and no body", path, tc.inm, a.status,
					a.header.Get("ETag"), a.body, etag)
			}
			// The figures may have moved on in between (a status's as_of): a 200 then is right.
			if a.status != tc.status && !(a.status == 200 && a.header.Get("ETag") != etag) {
				t.Errorf("%s If-None-Match %s: %d, want %d", path, tc.inm, a.status, tc.status)
			}
			if a.status == 304 && a.header.Get("Cache-Control") != "public, max-age=1, stale-while-revalidate=1" {
				t.Errorf("%s: a 304 with Cache-Control %q", path, a.header.Get("Cache-Control"))
			}
		}
	}
	// A buyer joins: within a second or so the status (joined) and its ETag change.
	path := fmt.Sprintf("/api/v1/activities/%d/line/status", room)
	before := s.do(call{method: "GET", path: path})
	if a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/line", room), token: testutil.Token(t, 7, false),
		body: "{}"}); a.status != http.StatusCreated {
		t.Fatalf("join: %d %s", a.status, a.body)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		a := s.do(call{method: "GET", path: path, header: map[string]string{"If-None-Match": before.header.Get("ETag")}})
		var st waitingroom.Status
		if a.status == 200 && json.Unmarshal([]byte(a.body), &st) == nil && st.Joined == 1 {
			if a.header.Get("ETag") == before.header.Get("ETag") {
				t.Errorf("a changed status kept its ETag %s", a.header.Get("ETag"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the status never showed the join: %d %s", a.status, a.body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The public sale comes from the list's snapshot, unknown ids too: a sale MySQL gains
// behind this API's back (another API's create) reads 404 from the snapshot until the
// snapshot is a second old, then 200.
func TestPublicSaleFromTheSnapshot(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	s.sale(10, 1, now.Add(-time.Minute), now.Add(time.Hour))
	for attempt := 0; ; attempt++ {
		loaded := time.Now()
		if a := s.do(call{method: "GET", path: "/api/v1/activities"}); a.status != 200 {
			t.Fatalf("list: %d %s", a.status, a.body)
		}
		row := store.Activity{Name: "behind", ProductName: "p", PriceCents: 1, StockTotal: 1, PerUserLimit: 1,
			StartsAt: now, EndsAt: now.Add(time.Hour), PayWindowSeconds: 60, Kind: sale.KindSale}
		if err := s.db.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
		path := fmt.Sprintf("/api/v1/activities/%d", row.ID)
		a := s.do(call{method: "GET", path: path})
		if time.Since(loaded) >= 800*time.Millisecond { // the snapshot may have been loaded again: try again
			if attempt == 5 {
				t.Fatal("the machine is too slow to read a sale within 800 ms of the list")
			}
			continue
		}
		if a.status != http.StatusNotFound {
			t.Errorf("a sale created behind the snapshot: %d %s, want 404 from the snapshot", a.status, a.body)
		}
		deadline := time.Now().Add(3 * time.Second)
		for a.status != http.StatusOK && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			a = s.do(call{method: "GET", path: path})
		}
		if a.status != http.StatusOK {
			t.Errorf("the sale 3 s later: %d %s, want 200", a.status, a.body)
		}
		return
	}
}
