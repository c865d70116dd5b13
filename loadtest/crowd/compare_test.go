package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestOtherEndpoint sends the other service's request from many goroutines and checks
// that every request named its own user, in the URL and the body alike, that a later
// run's users do not repeat an earlier run's, and how its answers are labelled: a
// success only when a 2xx holds the ok text, a refusal for any other answer below 500.
func TestOtherEndpoint(t *testing.T) {
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
		n, err := strconv.ParseInt(user, 10, 64)
		switch {
		case err != nil:
			http.Error(w, "no user", http.StatusBadRequest)
		case n%4 == 0:
			io.WriteString(w, `{"msg":"ok"}`)
		case n%4 == 1:
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"msg":"no stock"}`)
		case n%4 == 2:
			io.WriteString(w, `{"msg":"sold out"}`) // a 200 without the ok text
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	client := newAPI([]string{""}, 8, 5*time.Second, "")
	const goroutines, each = 8, 50
	got := newTally()
	run := func() {
		e := otherEndpoint{url: srv.URL + "/buy?coupon_id=1&user_id={user}", method: http.MethodPost,
			body: []byte(`{"user":{user}}`), ok: `"ok"`, users: newUsers()}
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range each {
					r := e.call(context.Background(), client)
					mu.Lock()
					got.add(r)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	run()
	time.Sleep(time.Millisecond) // the next run starts at least a microsecond later
	run()

	const requests = 2 * goroutines * each
	if len(seen) != requests {
		t.Errorf("%d distinct users in %d requests, want one each", len(seen), requests)
	}
	for user, n := range seen {
		if n != 1 {
			t.Errorf("user %s in %d requests, want 1", user, n)
		}
	}
	// Each run numbers its users consecutively, so each status takes a quarter of them.
	for _, label := range []string{"200 ok", "409 refused", "200 refused", "503 ?"} {
		if n := got.counts[label]; n != requests/4 {
			t.Errorf("%d answers %q, want %d (all: %v)", n, label, requests/4, got.counts)
		}
	}
	p := phase{tally: got, elapsed: time.Second}
	if r := p.refusedRate(); r != requests/2 {
		t.Errorf("refused rate %v/s, want %d/s", r, requests/2)
	}
}
