package worker_test

import (
	"context"
	"testing"

	"github.com/hibiken/asynq"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"seckill/internal/queue"
	"seckill/internal/testutil"
	"seckill/internal/worker"
)

// An order's task waits in a group until a worker aggregates it; the queue depth
// counts it from the moment it is enqueued.
func TestQueueDepthCountsTasksWaitingInGroups(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	depth := worker.QueueDepth(asynq.NewInspectorFromRedisClient(rdb))
	if got := promtest.ToFloat64(depth); got != 0 {
		t.Fatalf("empty queue: depth %v, want 0", got)
	}
	enq := queue.NewEnqueuer(asynq.NewClientFromRedisClient(rdb))
	for i, id := range []string{"01KAAAAAAAAAAAAAAAAAAAAAAA1", "01KAAAAAAAAAAAAAAAAAAAAAAB1"} {
		o := queue.Order{ID: id, ActivityID: 1, UserID: int64(i + 1), Quantity: 1, AmountCents: 1,
			CreatedAtMs: 1, ExpiresAtMs: 2, Limit: 1}
		if err := enq.Enqueue(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if got := promtest.ToFloat64(depth); got != 2 {
		t.Errorf("two orders waiting in their groups: depth %v, want 2", got)
	}
}
