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

// AppendJSON writes every time as time.AppendFormat does with Layout, in UTC and cut to
// the millisecond: times of every field's edges and spread over the years it writes.
func TestAppendJSONAsLayout(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("CET", 3600), time.FixedZone("-0930", -(9*3600 + 1800))}
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 2, 28, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2028, 2, 29, 12, 0, 0, 1_000_000, time.UTC),
		time.Date(999, 10, 9, 8, 7, 6, 54_321_000, time.UTC),
	}
	for i := range 5000 { // a time every ~23 days and ~7 hours over the years written
		times = append(times, time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*(559*time.Hour+7*time.Minute+13*time.Second+987_654_321)))
	}
	for _, tt := range times {
		for _, z := range zones {
			in := tt.In(z)
			if in.UTC().Year() > 9999 || in.UTC().Year() < 0 {
				continue
			}
			got, err := apitime.Time{Time: in}.AppendJSON(nil)
			want := `"` + in.UTC().Truncate(time.Millisecond).Format(apitime.Layout) + `"`
			if err != nil || string(got) != want {
				t.Fatalf("%v: %s, %v; want %s", in, got, err, want)
			}
		}
	}
	for _, y := range []int{-1, 10000} {
		if b, err := (apitime.Time{Time: time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC)}).AppendJSON(nil); err == nil {
			t.Errorf("year %d: %s, want an error", y, b)
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	v := apitime.Of(time.Date(2026, 11, 26, 21, 20, 45, 947_000_000, time.UTC))
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf, _ = v.AppendJSON(buf[:0])
	}
}
