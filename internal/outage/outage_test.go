package outage

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func span(from, to float64) Span { return Span{From: at(from), To: at(to)} }

func TestDeadline(t *testing.T) {
	tests := []struct {
		name       string
		outages    Outages
		start, end float64 // the window as set
		now        float64
		want       float64
	}{
		{"no outage", Outages{}, 0, 10, 5, 10},
		{"the issue's: 15 s from 3 s into a 10 s window", Outages{Spans: []Span{span(3, 18)}}, 0, 10, 20, 25},
		{"an outage before the window", Outages{Spans: []Span{span(-20, -5)}}, 0, 10, 5, 10},
		{"an outage after the window", Outages{Spans: []Span{span(12, 30)}}, 0, 10, 40, 10},
		{"an outage right at its end", Outages{Spans: []Span{span(10, 30)}}, 0, 10, 40, 10},
		{"the window begins inside an outage: it runs from the end", Outages{Spans: []Span{span(-5, 4)}}, 0, 10, 8, 14},
		{"a window inside an outage", Outages{Spans: []Span{span(-5, 40)}}, 0, 10, 50, 50},
		{"two outages", Outages{Spans: []Span{span(2, 4), span(6, 9)}}, 0, 10, 20, 15},
		{"a later outage the extension reaches", Outages{Spans: []Span{span(5, 8), span(12, 20)}}, 0, 10, 30, 21},
		{"a later outage the extension does not reach", Outages{Spans: []Span{span(5, 8), span(13, 20)}}, 0, 10, 30, 13},
		{"an open outage counts until now", Outages{Spans: []Span{span(6, 9)}, Open: true}, 0, 10, 30, 34},
		{"an open outage read later than now", Outages{Spans: []Span{span(6, 9)}, Open: true}, 0, 10, 8, 13},
		{"an open outage begun after the window ended", Outages{Spans: []Span{span(11, 12)}, Open: true}, 0, 10, 30, 10},
		{"an open outage that began with time left keeps the window open", Outages{Spans: []Span{span(9.9, 10)}, Open: true}, 0, 10, 500, 500.1},
		{"an outage longer than the grace ends it", Outages{Spans: []Span{span(5, 5+2*3600)}}, 0, 10, 3 * 3600, 10 + 3600},
		{"the grace bounds the sum of outages", Outages{Spans: []Span{span(2, 2+1800), span(1805, 1805+1800)}}, 0, 10, 3 * 3600, 10 + 3600},
		{"a group's pay window, begun when it filled", Outages{Spans: []Span{span(-30, -10), span(5, 6)}}, 0, 10, 20, 11},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.outages.Deadline(at(tc.start), at(tc.end), at(tc.now))
			if !got.Equal(at(tc.want)) {
				t.Errorf("deadline = t0%+v, want t0%+v", got.Sub(t0), at(tc.want).Sub(t0))
			}
		})
	}
}
