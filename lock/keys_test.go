package lock

import "testing"

// The slot and the related names follow Redis Cluster's hash tag rule: the text
// between the first '{' and the first '}' after it, when not empty.
func TestHashTags(t *testing.T) {
	for _, tt := range []struct{ key, slot, waiters string }{
		{"seckill:{act:1}:lock:2", "act:1", "seckill:{act:1}:lock:2:waiters"},
		{"job", "job", "{job}:waiters"},
		{"{x}", "x", "{x}:waiters"},
		{"a{}b{c}", "a{}b{c}", "a{}b{c}:waiters"}, // empty first tag: the whole key
		{"a}b{c}", "c", "a}b{c}:waiters"},
		{"a{b", "a{b", "{a{b}:waiters"},
	} {
		if got := hashSlotOf(tt.key); got != tt.slot {
			t.Errorf("hashSlotOf(%q) = %q, want %q", tt.key, got, tt.slot)
		}
		if got := waitersKey(tt.key); got != tt.waiters {
			t.Errorf("waitersKey(%q) = %q, want %q", tt.key, got, tt.waiters)
		}
	}
}
