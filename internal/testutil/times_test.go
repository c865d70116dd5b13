package testutil

import (
	"fmt"
	"testing"
)

// errorsOf records the failures a check reports instead of failing the test.
type errorsOf struct {
	testing.TB
	got []string
}

func (e *errorsOf) Helper()                      {}
func (e *errorsOf) Errorf(f string, args ...any) { e.got = append(e.got, fmt.Sprintf(f, args...)) }

func TestCheckTimes(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		checked  int
		failures int
	}{
		{"in the format", `{"created_at":"2026-11-26T21:20:45.947Z","data":{"order":{"expires_at":"2026-11-26T21:35:45.000Z"}}}`, 2, 0},
		{"nanoseconds", `{"order":{"expires_at":"2026-11-26T21:35:45.947011576Z"}}`, 1, 1},
		{"no fraction", `{"starts_at":"2026-11-26T21:35:45Z"}`, 1, 1},
		{"fewer digits", `{"groups":[{"expires_at":"2026-11-26T21:35:45.9Z"}]}`, 1, 1},
		{"another zone", `{"paid_at":"2026-11-26T22:35:45.947+01:00"}`, 1, 1},
		{"not a time under a time's name", `{"paid_at":"yesterday"}`, 1, 1},
		{"a time under another name", `{"when":"2026-11-26T21:35:45Z","last_seen":"2026-11-26T21:35:45.100Z"}`, 2, 1},
		{"no time", `{"id":"o1","quantity":1,"status":"created"}`, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &errorsOf{TB: t}
			if n := CheckTimes(e, "body", []byte(tt.body)); n != tt.checked || len(e.got) != tt.failures {
				t.Errorf("checked %d times with %d failures %q; want %d and %d", n, len(e.got), e.got, tt.checked, tt.failures)
			}
		})
	}
}
