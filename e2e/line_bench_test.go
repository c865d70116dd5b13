package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// BenchmarkLineAnswers measures, in one run against the same API process (cmd/api as
// shipped, over loopback HTTP, with its worker and a private Redis and database),
// GET /healthz, joins of a waiting room's line (each a new buyer: 201), reads of a
// ticket (GET .../line by 1,000 buyers in turn) and of the line's public status (GET
// .../line/status, no token, from the API's snapshot: no Redis call), with the limits
// off, and reports their req/s and the ratios to healthz's (docs/performance.md). The clients run in
// this process, on the same two cores, and weigh on all three alike.
//
//	go test -run '^$' -bench LineAnswers -benchtime 1x ./e2e/
func BenchmarkLineAnswers(b *testing.B) {
	s := testutil.StartStack(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	now := time.Now()
	req, _ := http.NewRequest("POST", s.URL+"/api/v1/admin/activities", strings.NewReader(fmt.Sprintf(
		`{"name":"n","product_name":"p","price_cents":100,"stock":1000000,"per_user_limit":1,"starts_at":%q,"ends_at":%q,"waiting_room":true,"admit_per_second":1,"prequeue_seconds":7200}`,
		now.Add(time.Hour).Format(time.RFC3339), now.Add(2*time.Hour).Format(time.RFC3339))))
	req.Header.Set("Authorization", "Bearer "+testutil.Token(b, 1, true))
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	var act struct{ ID int64 }
	if err := json.NewDecoder(resp.Body).Decode(&act); err != nil || resp.StatusCode != http.StatusCreated {
		b.Fatalf("create the sale: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	line := fmt.Sprintf("%s/api/v1/activities/%d/line", s.URL, act.ID)
	send := func(method, url, token string, want int) error {
		req, _ := http.NewRequest(method, url, strings.NewReader(`{}`))
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			return fmt.Errorf("%s %s: %d, want %d", method, url, resp.StatusCode, want)
		}
		return nil
	}
	const readers = 1000
	readerTokens := make([]string, readers)
	for i := range readerTokens {
		readerTokens[i] = "Bearer " + testutil.Token(b, int64(10_000_000+i), false)
		if err := send("POST", line, readerTokens[i], http.StatusCreated); err != nil {
			b.Fatal(err)
		}
	}
	var joiner atomic.Int64 // every join is a new buyer's
	loads := []struct {
		name string
		op   func() error
	}{
		{"healthz", func() error { return send("GET", s.URL+"/healthz", "", http.StatusOK) }},
		{"join", func() error {
			return send("POST", line, "Bearer "+testutil.Token(b, 100+joiner.Add(1), false), http.StatusCreated)
		}},
		{"ticket", func() error {
			return send("GET", line, readerTokens[int(joiner.Add(1))%readers], http.StatusOK)
		}},
		{"status", func() error { return send("GET", line+"/status", "", http.StatusOK) }},
	}
	// The loads take turns of a second, five rounds, so that what else runs on the
	// machine weighs on each alike; each turn has 64 clients in flight.
	const clients, turn, rounds = 64, time.Second, 5
	done := make([]int64, len(loads))
	spent := make([]time.Duration, len(loads))
	for range b.N {
		for range rounds {
			for i, l := range loads {
				var n atomic.Int64
				stop := make(chan struct{})
				finished := make(chan struct{})
				start := time.Now()
				for range clients {
					go func() {
						defer func() { finished <- struct{}{} }()
						for {
							select {
							case <-stop:
								return
							default:
							}
							if err := l.op(); err != nil {
								b.Error(err)
								return
							}
							n.Add(1)
						}
					}()
				}
				// A turn of load of a fixed length: what the benchmark measures.
				time.Sleep(turn)
				close(stop)
				for range clients {
					<-finished
				}
				done[i] += n.Load()
				spent[i] += time.Since(start)
			}
		}
	}
	rate := func(i int) float64 { return float64(done[i]) / spent[i].Seconds() }
	b.ReportMetric(rate(0), "healthz/s")
	b.ReportMetric(rate(1), "joins/s")
	b.ReportMetric(rate(2), "ticket-reads/s")
	b.ReportMetric(rate(3), "status-reads/s")
	b.ReportMetric(rate(1)/rate(0), "joins/healthz")
	b.ReportMetric(rate(2)/rate(0), "tickets/healthz")
	b.ReportMetric(rate(3)/rate(0), "status/healthz")
}
