package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOtherEndpointNumbersEachUser sends the other service's request from many
// goroutines and checks that every request named its own user, in the URL and the body
// alike, and that a later run's numbers do not repeat an earlier run's.
func TestOtherEndpointNumbersEachUser(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		user := r.URL.Query().Get("user_id")
		if want := `{"user":` + user + `}`; string(body) != want {
			t.Errorf("body %s, want %s", body, want)
		}
		mu.Lock()
		seen[user]++
		mu.Unlock()
		if user == "" || strings.Contains(user, "{") {
			http.Error(w, "no user", http.StatusBadRequest)
			return
		}
		io.WriteString(w, `{"msg":"ok"}`)
	}))
	defer srv.Close()

	client := newAPI([]string{""}, 8, 5*time.Second, "")
	const goroutines, each = 8, 50
	run := func() {
		e := otherEndpoint{url: srv.URL + "/buy?coupon_id=1&user_id={user}", method: http.MethodPost,
			body: []byte(`{"user":{user}}`), ok: `"ok"`, users: newUsers()}
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range each {
					if r := e.call(context.Background(), client); r.code != "ok" {
						t.Errorf("answer %s %s (err %v), want 200 ok", r.label(), r.body, r.err)
					}
				}
			})
		}
		wg.Wait()
	}
	run()
	time.Sleep(time.Millisecond) // the next run starts at least a microsecond later
	run()

	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2*goroutines*each {
		t.Errorf("%d distinct users in %d requests, want one each", len(seen), 2*goroutines*each)
	}
	for user, n := range seen {
		if n != 1 {
			t.Errorf("user %s in %d requests, want 1", user, n)
		}
	}
}
