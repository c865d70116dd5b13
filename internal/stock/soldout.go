package stock

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// soldOutTTL bounds how long a sold-out flag answers without asking Redis, in case a
// ReturnedChannel message was missed.
const soldOutTTL = time.Second

// soldOutFlags remembers, in this process, the sales Redis said were sold out. A
// purchase of a flagged sale is refused without a round trip. A flag is dropped when
// units come back (a message on ReturnedChannel), and after soldOutTTL.
type soldOutFlags struct {
	flags sync.Map // activity id -> time the flag was set
	// gen changes whenever flags are cleared; a flag computed from a Redis answer
	// older than the last clearing is not set, so a late "sold out" cannot hide units
	// that came back meanwhile.
	gen atomic.Uint64
}

func newSoldOutFlags() *soldOutFlags { return &soldOutFlags{} }

func (f *soldOutFlags) epoch() uint64 { return f.gen.Load() }

func (f *soldOutFlags) isSet(activityID int64, now time.Time) bool {
	v, ok := f.flags.Load(activityID)
	return ok && now.Sub(v.(time.Time)) < soldOutTTL
}

func (f *soldOutFlags) set(activityID int64, epoch uint64, now time.Time) {
	if f.gen.Load() == epoch {
		f.flags.Store(activityID, now)
	}
}

func (f *soldOutFlags) clear(activityID int64) {
	f.gen.Add(1)
	f.flags.Delete(activityID)
}

func (f *soldOutFlags) clearAll() {
	f.gen.Add(1)
	f.flags.Clear()
}

// Watch listens on ReturnedChannel and clears this process's sold-out flag of every
// sale whose units come back, until ctx ends. After a reconnect it clears them all,
// since messages may have been missed.
func (s *Stock) Watch(ctx context.Context) {
	ps := s.rdb.Subscribe(ctx, ReturnedChannel)
	defer ps.Close()
	for {
		msg, err := ps.Receive(ctx)
		if ctx.Err() != nil {
			return
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			s.soldOut.clearAll()
		case *redis.Message:
			if id, err := strconv.ParseInt(m.Payload, 10, 64); err == nil {
				s.soldOut.clear(id)
			}
		}
		if err != nil {
			s.soldOut.clearAll()
			slog.Warn("stock: returned-units subscription", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}
