package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"seckill/internal/outbox"
	"seckill/internal/testutil"
)

// benchBatch is how many events one transaction writes, as the worker's persister
// writes a task's orders (SECKILL_PERSIST_BATCH is 250; under a crowd a transaction
// holds tens to hundreds).
const benchBatch = 100

// benchEvents returns the i-th event: two per order, created then paid.
func benchEvent(i int) outbox.Event {
	typ := outbox.OrderCreated
	if i%2 == 1 {
		typ = outbox.OrderPaid
	}
	id := fmt.Sprintf("order-%07d", i/2)
	return outbox.Event{Type: typ, Subject: id, At: time.Now(),
		Data: map[string]any{"order": map[string]any{"id": id, "status": typ[len("order."):], "quantity": 1, "amount_cents": 1500}}}
}

// recordBatches writes events [from, to) in transactions of benchBatch.
func recordBatches(b *testing.B, db *gorm.DB, from, to int) {
	for i := from; i < to; i += benchBatch {
		events := make([]outbox.Event, 0, benchBatch)
		for j := i; j < min(i+benchBatch, to); j++ {
			events = append(events, benchEvent(j))
		}
		if err := db.Transaction(func(tx *gorm.DB) error { return outbox.Record(tx, events...) }); err != nil {
			b.Fatal(err)
		}
	}
}

// subscribeAll subscribes r to every event type.
func subscribeAll(b *testing.B, db *gorm.DB, r *testutil.Receiver) {
	w, err := outbox.NewWebhooks(db, true).Create(context.Background(), r.URL, nil)
	if err != nil {
		b.Fatal(err)
	}
	r.SetSecret(b, w.Secret)
}

// deliver starts one delivery loop (one worker's) over db, stopped at cleanup.
func deliver(b *testing.B, db *gorm.DB) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		outbox.NewDeliverer(db, true).Run(ctx)
	}()
	b.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitDelivered waits until r has accepted n distinct events, all of them signed right.
func waitDelivered(b *testing.B, r *testutil.Receiver, n int) {
	deadline := time.Now().Add(10 * time.Minute)
	distinct := func() int {
		ids := map[string]bool{}
		for _, d := range r.Accepted() {
			ids[d.ID] = true
		}
		return len(ids)
	}
	for distinct() < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d events delivered", distinct(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if bad := r.Invalid(); len(bad) > 0 {
		b.Fatalf("%d deliveries whose signature did not verify: %q", len(bad), bad[0])
	}
}

// BenchmarkDeliveryThroughput: b.N events already in the outbox (two per order), then
// one delivery loop sends them to a local endpoint that verifies every signature with
// the official library. Reports events delivered per second.
func BenchmarkDeliveryThroughput(b *testing.B) {
	db := testutil.MySQL(b).Gorm
	r := testutil.StartReceiver(b)
	subscribeAll(b, db, r)
	recordBatches(b, db, 0, b.N)
	b.ResetTimer()
	start := time.Now()
	deliver(b, db)
	waitDelivered(b, r, b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkDeliveryLag: events written at a steady 3,000 per second (what make loadtest
// persists, orders/s, at its busiest) in transactions of benchBatch while one delivery
// loop sends them. Reports the lag from each change (its event's created_at) to its
// delivery: p50 and p99 in ms.
func BenchmarkDeliveryLag(b *testing.B) {
	const rate = 3000
	db := testutil.MySQL(b).Gorm
	r := testutil.StartReceiver(b)
	subscribeAll(b, db, r)
	deliver(b, db)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i += benchBatch {
		// Events are written at the rate the benchmark measures the lag at.
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / rate)))
		recordBatches(b, db, i, min(i+benchBatch, b.N))
	}
	waitDelivered(b, r, b.N)
	b.StopTimer()
	lags := make([]float64, 0, b.N)
	for _, d := range r.Accepted() {
		var ev struct {
			CreatedAt time.Time `json:"created_at"`
		}
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			b.Fatal(err)
		}
		lags = append(lags, float64(d.At.Sub(ev.CreatedAt))/float64(time.Millisecond))
	}
	slices.Sort(lags)
	b.ReportMetric(lags[len(lags)/2], "p50_lag_ms")
	b.ReportMetric(lags[len(lags)*99/100], "p99_lag_ms")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}
