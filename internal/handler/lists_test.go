package handler_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/internal/handler"
	"seckill/internal/testutil"
)

// countStatements counts the statements GORM sends to MySQL on db from now to the end
// of the test, those whose SQL holds table (every one for ""), whoever sends them.
func countStatements(t *testing.T, db *gorm.DB, table string) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	count := func(tx *gorm.DB) {
		if table == "" || strings.Contains(tx.Statement.SQL.String(), table) {
			n.Add(1)
		}
	}
	name := fmt.Sprintf("test:count:%p", &n)
	cb := db.Callback()
	for _, err := range []error{
		cb.Query().After("gorm:query").Register(name, count),
		cb.Row().After("gorm:row").Register(name, count),
		cb.Raw().After("gorm:raw").Register(name, count),
		cb.Create().After("gorm:create").Register(name, count),
		cb.Update().After("gorm:update").Register(name, count),
		cb.Delete().After("gorm:delete").Register(name, count),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = cb.Query().Remove(name)
		_ = cb.Row().Remove(name)
		_ = cb.Raw().Remove(name)
		_ = cb.Create().Remove(name)
		_ = cb.Update().Remove(name)
		_ = cb.Delete().Remove(name)
	})
	return &n
}

type activityPage struct {
	Activities []struct{ ID int64 }
	Next       *string
}

func (s *stack) page(path, token string) (activityPage, answer) {
	s.t.Helper()
	a := s.do(call{method: "GET", path: path, token: token})
	var p activityPage
	if a.status == http.StatusOK {
		if err := json.Unmarshal([]byte(a.body), &p); err != nil {
			s.t.Fatalf("GET %s: %v: %s", path, err, a.body)
		}
	}
	return p, a
}

// The public and the admin's lists of sales are paged, newest first: limit bounds a
// page, next names where the next one starts (null after the last), and after takes
// it. A bad after or limit is 400 naming the field.
func TestActivityListsPaged(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	var ids []int64
	for range 5 {
		ids = append([]int64{s.sale(10, 1, now.Add(-time.Minute), now.Add(time.Hour))}, ids...) // newest first
	}
	admin := testutil.Token(t, 1, true)
	for _, list := range []struct{ path, token string }{{"/api/v1/activities", ""}, {"/api/v1/admin/activities", admin}} {
		t.Run(list.path, func(t *testing.T) {
			var got []int64
			var nexts []string
			path := list.path + "?limit=2"
			for range 4 {
				p, a := s.page(path, list.token)
				if a.status != http.StatusOK || !strings.Contains(a.body, `"next":`) {
					t.Fatalf("GET %s: %d %s, want 200 with next", path, a.status, a.body)
				}
				for _, act := range p.Activities {
					got = append(got, act.ID)
				}
				if p.Next == nil {
					break
				}
				nexts = append(nexts, *p.Next)
				path = list.path + "?limit=2&after=" + *p.Next
			}
			if fmt.Sprint(got) != fmt.Sprint(ids) {
				t.Errorf("pages of 2 gave %v, want %v", got, ids)
			}
			if want := []string{fmt.Sprint(ids[1]), fmt.Sprint(ids[3])}; fmt.Sprint(nexts) != fmt.Sprint(want) {
				t.Errorf("next cursors %v, want %v (the last id of each page but the last)", nexts, want)
			}
			if p, a := s.page(list.path, list.token); len(p.Activities) != 5 || p.Next != nil {
				t.Errorf("GET %s (limit 100 by default): %s, want the 5 sales and next null", list.path, a.body)
			}
			if p, a := s.page(list.path+"?limit=5", list.token); len(p.Activities) != 5 || p.Next != nil {
				t.Errorf("a page of exactly what is left: %s, want next null", a.body)
			}
			for _, bad := range []struct{ query, field string }{
				{"after=abc", "after"}, {"after=0", "after"}, {"after=01", "after"}, {"after=-1", "after"}, {"after=", "after"},
				{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=x", "limit"}, {"limit=01", "limit"}, {"limit=", "limit"},
			} {
				a := s.do(call{method: "GET", path: list.path + "?" + bad.query, token: list.token})
				wantError(t, a, http.StatusBadRequest, "invalid_request")
				if !strings.Contains(a.body, `"message":"`+bad.field+" ") {
					t.Errorf("?%s: %s, want the message to name %s", bad.query, a.body, bad.field)
				}
			}
		})
	}
}

// The public list comes from a snapshot at most a second old: a flood of it reaches
// MySQL at most once a second, and a new sale shows in it once the snapshot is renewed.
func TestPublicListFromSnapshot(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	first := s.sale(10, 1, now.Add(-time.Minute), now.Add(time.Hour))
	selects := countStatements(t, s.db, "activities")
	const gets, clients = 2000, 20
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range gets / clients {
				resp, err := http.Get(s.url + "/api/v1/activities")
				if err != nil {
					t.Errorf("client %d: %v", c, err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("client %d: %d", c, resp.StatusCode)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	// One load per second of the clock the flood touches (internal/snapshot), the first
	// at the first GET.
	if n, most := selects.Load(), int64(elapsed/time.Second)+2; n < 1 || n > most {
		t.Errorf("%d GETs of the list in %v ran %d SELECTs of activities, want 1 to %d (one a second)", gets, elapsed, n, most)
	}
	t.Logf("%d GETs in %v: %d SELECTs of activities", gets, elapsed, selects.Load())

	second := s.sale(10, 1, now.Add(-time.Minute), now.Add(time.Hour))
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, _ := s.page("/api/v1/activities", "")
		if len(p.Activities) == 2 && p.Activities[0].ID == second && p.Activities[1].ID == first {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the public list never showed the new sale %d: %+v", second, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A scrape of /metrics asks MySQL nothing: the stock gauges show the sales of the last
// snapshot of the public list, with what Redis has left.
func TestScrapeAsksMySQLNothing(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := time.Now()
	act := s.sale(10, 2, now.Add(-time.Minute), now.Add(time.Hour))
	buyer := testutil.Token(t, 5, false)
	a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", act), token: buyer, body: `{"quantity":2}`})
	var o struct{ ID, Status string }
	if err := json.Unmarshal([]byte(a.body), &o); a.status != http.StatusAccepted || err != nil {
		t.Fatalf("a purchase: %d %s", a.status, a.body)
	}
	// The worker writes the order to MySQL meanwhile: the count begins once it has.
	for deadline := time.Now().Add(30 * time.Second); o.Status != "created"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the order never reached MySQL: %+v", o)
		}
		_ = json.Unmarshal([]byte(s.do(call{method: "GET", path: "/api/v1/orders/" + o.ID, token: buyer}).body), &o)
	}
	if _, a := s.page("/api/v1/activities", ""); a.status != http.StatusOK {
		t.Fatalf("the public list: %d %s", a.status, a.body)
	}
	statements := countStatements(t, s.db, "")
	want := fmt.Sprintf(`seckill_stock_available{activity_id="%d"} 8`, act)
	for i := range 100 {
		resp, err := http.Get(s.metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if i == 0 && !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, b)
		}
	}
	if n := statements.Load(); n != 0 {
		t.Errorf("100 scrapes ran %d MySQL statements, want none", n)
	}
	// The same watch sees a statement when one is made: the count is no check that cannot fail.
	if _, a := s.page("/api/v1/admin/activities", testutil.Token(t, 1, true)); a.status != http.StatusOK || statements.Load() == 0 {
		t.Errorf("the admin's list (MySQL at the moment): %d, %d statements seen, want some", a.status, statements.Load())
	}
}
