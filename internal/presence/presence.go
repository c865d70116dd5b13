// Package presence keeps which API and worker processes are alive, by heartbeats in
// Redis: each process writes its own record every Interval, a record not refreshed for
// Timeout is gone (a process killed with SIGKILL disappears within Timeout+Interval),
// and a process that shuts down cleanly removes its record at once. Both keys share one
// hash tag, so the scripts run on a Redis Cluster as on one server. A record carries the
// process's live figures (FromRegistry) and, for an API, its purchase answers per sale
// and outcome (Answers, WithSales).
package presence

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/apitime"
)

const (
	// Interval is how often a process writes its heartbeat.
	Interval = 2 * time.Second
	// Timeout is how old a heartbeat may be before its process counts as gone.
	Timeout = 6 * time.Second
)

// Keys: a sorted set of instance ids by their last heartbeat (unix ms), and a hash of
// id -> the instance as JSON.
const (
	seenKey = "seckill:{presence}:seen"
	infoKey = "seckill:{presence}:info"
)

// Instance is one live process as the admin sees it.
type Instance struct {
	ID        string       `json:"id"`
	Kind      string       `json:"kind"` // "api" or "worker"
	Addr      string       `json:"addr"`
	Version   string       `json:"version"`
	StartedAt apitime.Time `json:"started_at"`
	LastSeen  apitime.Time `json:"last_seen"`
	// Figures are the process's live rates and levels at its last heartbeat, such as
	// requests_per_second or queue_depth.
	Figures map[string]float64 `json:"figures"`
	// Sales are an API's purchase answers per second by sale and outcome in the
	// interval before its last heartbeat, for the sales it answered then (WithSales).
	Sales []SaleAnswers `json:"sales,omitempty"`
}

// Option adds to each heartbeat: it fills fields of the instance just before the
// heartbeat is written.
type Option func(*Instance)

// beatScript writes one heartbeat (beat.lua).
//
//go:embed beat.lua
var beatLua string
var beatScript = redis.NewScript(beatLua)

// listScript drops the instances not seen since a time and returns the others
// (list.lua).
//
//go:embed list.lua
var listLua string
var listScript = redis.NewScript(listLua)

// Registry reads and writes the heartbeats.
type Registry struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// New returns a Registry on rdb.
func New(rdb redis.UniversalClient) *Registry { return &Registry{rdb: rdb, now: time.Now} }

// SetClock replaces the clock (tests).
func (r *Registry) SetClock(now func() time.Time) { r.now = now }

// Beat records that inst is alive now.
func (r *Registry) Beat(ctx context.Context, inst Instance) error {
	inst.LastSeen = apitime.Of(r.now())
	if inst.Figures == nil {
		inst.Figures = map[string]float64{}
	}
	b, err := json.Marshal(inst)
	if err != nil {
		return err
	}
	if err := beatScript.Run(ctx, r.rdb, []string{seenKey, infoKey}, inst.ID, inst.LastSeen.UnixMilli(), b).Err(); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Leave removes an instance at once (a clean shutdown).
func (r *Registry) Leave(ctx context.Context, id string) error {
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, seenKey, id)
		p.HDel(ctx, infoKey, id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("leave: %w", err)
	}
	return nil
}

// List returns the instances whose last heartbeat is younger than Timeout, and forgets
// the others.
func (r *Registry) List(ctx context.Context) ([]Instance, error) {
	vals, err := listScript.Run(ctx, r.rdb, []string{seenKey, infoKey}, r.now().Add(-Timeout).UnixMilli()).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	out := make([]Instance, 0, len(vals))
	for _, v := range vals {
		var inst Instance
		if err := json.Unmarshal([]byte(v), &inst); err != nil {
			return nil, fmt.Errorf("list instances: %w", err)
		}
		out = append(out, inst)
	}
	return out, nil
}

// NewInstance describes this process: a fresh id, its kind and address, the build's
// commit, and now as its start.
func NewInstance(kind, addr string) Instance {
	return Instance{ID: kind + "-" + rand.Text()[:10], Kind: kind, Addr: addr, Version: Version(),
		StartedAt: apitime.Of(time.Now())}
}

// commit is set at link time by make build (-X seckill/internal/presence.commit=...),
// for builds without VCS stamps (GOFLAGS=-buildvcs=false).
var commit string

// Version is the commit the binary was built from ("+dirty" for uncommitted changes),
// or "unknown".
func Version() string {
	if commit != "" {
		return commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// Run writes inst's heartbeat every Interval, with the figures figures returns (nil for
// none) and what opts add, until ctx ends; then it removes inst. A failed heartbeat is
// logged and tried again at the next beat.
func (r *Registry) Run(ctx context.Context, inst Instance, figures func() map[string]float64, opts ...Option) {
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		if figures != nil {
			inst.Figures = figures()
		}
		for _, o := range opts {
			o(&inst)
		}
		bctx, cancel := context.WithTimeout(ctx, Interval)
		if err := r.Beat(bctx, inst); err != nil && ctx.Err() == nil {
			slog.Warn("presence: heartbeat", "err", err)
		}
		cancel()
		select {
		case <-ctx.Done():
			lctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := r.Leave(lctx, inst.ID); err != nil {
				slog.Warn("presence: leave", "err", err)
			}
			return
		case <-t.C:
		}
	}
}

// Start runs Run in the background and returns a function that stops it: it removes
// the instance and waits for that, and may be called more than once.
func (r *Registry) Start(inst Instance, figures func() map[string]float64, opts ...Option) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, inst, figures, opts...)
	}()
	return func() {
		cancel()
		<-done
	}
}
