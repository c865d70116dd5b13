package outage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// sec is s seconds.
func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// step is a report made at t0 + at seconds.
type step struct {
	at       float64
	instance string
	down     bool
	since    float64 // seconds since the process last saw MySQL answer
	back     float64 // seconds since MySQL answered again (up)
}

func TestRecord(t *testing.T) {
	tests := []struct {
		name     string
		steps    []step
		readAt   float64
		want     []Span
		wantOpen bool
	}{
		{"no outage", nil, 10, nil, false},
		{"an outage going on", []step{{10, "api-1", true, 1, 0}, {11.5, "api-1", true, 2.5, 0}}, 12, []Span{span(9, 12)}, true},
		{"an outage that ended", []step{{10, "api-1", true, 1, 0}, {20, "api-1", false, 11, 0}}, 25, []Span{span(9, 20)}, false},
		{"its end reported late: it ended when MySQL answered", []step{{10, "api-1", true, 1, 0}, {20, "api-1", false, 11, 3}}, 25, []Span{span(9, 17)}, false},
		{"seen by one process only, while the others see MySQL", []step{{10, "api-2", true, 0.5, 0}, {10, "worker-1", false, 0, 0}}, 12,
			[]Span{span(9.5, 12)}, true},
		{"two processes disagree: the union", []step{{10, "api-1", true, 0, 0}, {15, "worker-1", true, 0, 0},
			{20, "api-1", false, 10, 0}, {30, "worker-1", false, 15, 0}}, 31, []Span{span(10, 30)}, false},
		{"one still down holds it open", []step{{10, "api-1", true, 0, 0}, {15, "worker-1", true, 0, 0},
			{20, "api-1", false, 10, 0}, {24, "worker-1", true, 9, 0}}, 25, []Span{span(10, 25)}, true},
		{"a flapping link is one outage", []step{{10, "api-1", true, 0, 0}, {11, "api-1", false, 1, 0},
			{12, "api-1", true, 0, 0}, {13, "api-1", false, 1, 0}, {20, "api-1", true, 0, 0}, {21, "api-1", false, 1, 0}}, 30,
			[]Span{span(10, 13), span(20, 21)}, false},
		{"a process killed mid-outage: its report lapses", []step{{10, "worker-1", true, 0, 0}, {11, "worker-1", true, 1, 0}}, 40,
			[]Span{span(10, 11+Lapse.Seconds())}, false},
		{"a process killed mid-outage, the others still down", []step{{10, "worker-1", true, 0, 0}, {10, "api-1", true, 0, 0},
			{14, "api-1", true, 4, 0}}, 15, []Span{span(10, 15)}, true},
		{"a lapsed report joins the spans at the next report", []step{{10, "worker-1", true, 0, 0}, {40, "api-1", false, 0, 0}}, 41,
			[]Span{span(10, 10+Lapse.Seconds())}, false},
		{"an outage told only after it (Redis did not answer)", []step{{30, "api-1", false, 10, 2}}, 31, []Span{span(20, 28)}, false},
		{"an end told twice is one outage", []step{{10, "api-1", true, 1, 0}, {20, "api-1", false, 11, 0},
			{20.3, "api-1", false, 11.3, 0.3}}, 25, []Span{span(9, 20)}, false},
		{"an outage older than any window is forgotten", []step{{0, "api-1", true, 0, 0}, {10, "api-1", false, 10, 0},
			{10 + keep.Seconds() + 1, "api-1", true, 0, 0}}, 10 + keep.Seconds() + 2,
			[]Span{span(10+keep.Seconds()+1, 10+keep.Seconds()+2)}, true},
	}
	rdb := testutil.StartRedis(t).Client(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := rdb.FlushDB(context.Background()).Err(); err != nil { // a fresh record per case
				t.Fatal(err)
			}
			r := NewRecord(rdb)
			var now time.Time
			r.SetClock(func() time.Time { return now })
			for _, s := range tc.steps {
				now = at(s.at)
				if err := r.Report(context.Background(), Report{Instance: s.instance, Down: s.down, Since: sec(s.since), Back: sec(s.back)}); err != nil {
					t.Fatal(err)
				}
			}
			now = at(tc.readAt)
			got, err := r.Read(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Spans) != fmt.Sprint(tc.want) || got.Open != tc.wantOpen {
				t.Errorf("outages = %v open %t,\nwant      %v open %t", got.Spans, got.Open, tc.want, tc.wantOpen)
			}
		})
	}
}

// Redis' own clock, not the process's, dates the outages.
func TestRecordOnRedisClock(t *testing.T) {
	rdb := testutil.StartRedis(t).Client(t)
	r := NewRecord(rdb)
	before := time.Now()
	if err := r.Report(context.Background(), Report{Instance: "api-1", Down: true, Since: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if len(got.Spans) != 1 || !got.Open {
		t.Fatalf("outages = %+v, want one going on", got)
	}
	s := got.Spans[0]
	// The test's clock and Redis' are the same machine's.
	if s.From.Before(before.Add(-2*time.Second-50*time.Millisecond)) || s.From.After(after.Add(-2*time.Second)) ||
		s.To.Before(before) || s.To.After(after.Add(50*time.Millisecond)) {
		t.Errorf("outage %v .. %v, want from 2 s before %v and to the read (%v .. %v)", s.From, s.To, before, before, after)
	}
}
