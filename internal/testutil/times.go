package testutil

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// apiTime is the one format of every time in the service's answers and events: RFC
// 3339 in UTC with exactly three digits of fraction (internal/apitime).
var apiTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)

// CheckTimes fails the test for every time in the JSON body that is not in the
// service's one format, and returns how many times it checked. A time is a string
// under a key ending in _at, or last_seen, or any string that reads as RFC 3339. what
// names the body in the failure.
func CheckTimes(t testing.TB, what string, body []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Errorf("%s: %v in %s", what, err, body)
		return 0
	}
	n := 0
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				walk(k, e)
			}
		case []any:
			for _, e := range v {
				walk(key, e)
			}
		case string:
			_, err := time.Parse(time.RFC3339Nano, v)
			if err != nil && !strings.HasSuffix(key, "_at") && key != "last_seen" {
				return
			}
			n++
			if !apiTime.MatchString(v) {
				t.Errorf("%s: %s is %q, want RFC 3339 in UTC with milliseconds (2006-01-02T15:04:05.000Z)", what, key, v)
			}
		}
	}
	walk("", v)
	return n
}
