package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/task"
	"seckill/internal/testutil"
	"seckill/internal/worker"
)

// The queue depth counts tasks from the moment they are enqueued.
func TestQueueDepthCountsTasks(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	depth := worker.QueueDepth(asynq.NewInspectorFromRedisClient(rdb))
	if got := promtest.ToFloat64(depth); got != 0 {
		t.Fatalf("empty queue: depth %v, want 0", got)
	}
	enq := task.NewEnqueuer(asynq.NewClientFromRedisClient(rdb))
	var orders []stock.QueuedOrder
	for i, id := range []string{"01KAAAAAAAAAAAAAAAAAAAAAAA1", "01KAAAAAAAAAAAAAAAAAAAAAAB1", "01KAAAAAAAAAAAAAAAAAAAAAAC1"} {
		orders = append(orders, stock.QueuedOrder{OrderID: id, ActivityID: 1, Buyer: buyer.Of(int64(i + 1)), Quantity: 1,
			AmountCents: 1, CreatedAt: time.UnixMilli(1), ExpiresAt: time.UnixMilli(2), Limit: 1})
	}
	// Two orders in one task, as an API enqueues them, and one as the repair pass does.
	if err := enq.EnqueueBatch(context.Background(), orders[:2]); err != nil {
		t.Fatal(err)
	}
	if _, err := enq.EnqueueMissing(context.Background(), orders[2]); err != nil {
		t.Fatal(err)
	}
	if got := promtest.ToFloat64(depth); got != 2 {
		t.Errorf("two tasks waiting: depth %v, want 2", got)
	}
}
