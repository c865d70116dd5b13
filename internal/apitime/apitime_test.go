package apitime_test

import (
	"encoding/json"
	"testing"
	"time"

	"seckill/internal/apitime"
)

func TestMarshalJSON(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	tests := []struct {
		name string
		in   time.Time
		want string
	}{
		{"milliseconds", time.Date(2026, 11, 26, 21, 20, 45, 947_000_000, time.UTC), `"2026-11-26T21:20:45.947Z"`},
		{"nanoseconds are cut, not rounded", time.Date(2026, 11, 26, 21, 20, 45, 947_999_999, time.UTC), `"2026-11-26T21:20:45.947Z"`},
		{"a whole second keeps its three digits", time.Date(2026, 11, 26, 21, 20, 45, 0, time.UTC), `"2026-11-26T21:20:45.000Z"`},
		{"tenths keep their three digits", time.Date(2026, 11, 26, 21, 20, 45, 900_000_000, time.UTC), `"2026-11-26T21:20:45.900Z"`},
		{"another zone is written in UTC", time.Date(2026, 11, 26, 22, 20, 45, 1_500, paris), `"2026-11-26T21:20:45.000Z"`},
		{"the zero time", time.Time{}, `"0001-01-01T00:00:00.000Z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Both the value as built by Of and one built by hand are written alike.
			for _, v := range []apitime.Time{apitime.Of(tt.in), {Time: tt.in}} {
				b, err := json.Marshal(v)
				if err != nil || string(b) != tt.want {
					t.Errorf("marshal %v: %s, %v; want %s", tt.in, b, err, tt.want)
				}
				var back apitime.Time
				if err := json.Unmarshal(b, &back); err != nil || !back.Equal(tt.in.Truncate(time.Millisecond)) {
					t.Errorf("read back %s: %v, %v; want %v", b, back, err, tt.in.Truncate(time.Millisecond))
				}
			}
		})
	}
}

func TestOptional(t *testing.T) {
	at := time.Date(2026, 11, 26, 21, 20, 45, 123_456_789, time.UTC)
	v := struct {
		PaidAt *apitime.Time `json:"paid_at,omitempty"`
		Other  *apitime.Time `json:"other,omitempty"`
	}{PaidAt: apitime.OfPtr(&at), Other: apitime.OfPtr(nil)}
	b, err := json.Marshal(v)
	if want := `{"paid_at":"2026-11-26T21:20:45.123Z"}`; err != nil || string(b) != want {
		t.Errorf("got %s, %v; want %s", b, err, want)
	}
}

func TestYearOutOfRange(t *testing.T) {
	if b, err := json.Marshal(apitime.Of(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))); err == nil {
		t.Errorf("year 10000: %s, want an error (RFC 3339 has four digits)", b)
	}
}
