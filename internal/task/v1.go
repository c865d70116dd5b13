package task

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"seckill/internal/buyer"
	"seckill/internal/stock"
)

// TypePersistV1 is the persist task as the previous release enqueued it, read so that
// its tasks (still waiting during a rolling deploy, or retried through a MySQL outage)
// are written by a worker of this one. Nothing enqueues it any more; it can go once no
// such task can be queued.
const TypePersistV1 = "order:persist"

// parseV1 reads a line of a TypePersistV1 task (its buyers are decimal user ids): "id
// activity user quantity amount created expires limit" (times in unix ms), then "cap
// group size group-end" (group "-" for none) when the order had a cap, a group or an
// Idempotency-Key, then "key fingerprint" when it had a key.
func parseV1(line []byte) (stock.QueuedOrder, error) {
	f := strings.Fields(string(line))
	if len(f) != 8 && len(f) != 12 && len(f) != 14 {
		return stock.QueuedOrder{}, fmt.Errorf("%d fields in %q", len(f), line)
	}
	var n [11]int64
	for i := range f[1:min(len(f), 12)] {
		if i == 8 { // the group id
			continue
		}
		var err error
		if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return stock.QueuedOrder{}, fmt.Errorf("field %d of %q", i+2, line)
		}
	}
	q := stock.QueuedOrder{OrderID: f[0], ActivityID: n[0], Buyer: buyer.Of(n[1]), Quantity: int(n[2]), AmountCents: n[3],
		CreatedAt: time.UnixMilli(n[4]).UTC(), ExpiresAt: time.UnixMilli(n[5]).UTC(), Limit: int(n[6]),
		ParticipationCap: int(n[7])}
	if len(f) >= 12 && f[9] != "-" {
		q.Group, q.GroupSize, q.GroupExpiresAt = f[9], int(n[9]), time.UnixMilli(n[10]).UTC()
	}
	if len(f) == 14 {
		q.IdempotencyKey, q.Fingerprint = f[12], f[13]
	}
	if q.ActivityID <= 0 || n[1] <= 0 || q.Quantity <= 0 || q.Limit <= 0 {
		return stock.QueuedOrder{}, fmt.Errorf("incomplete %q", line)
	}
	return q, nil
}
