package outbox

import (
	"net/netip"
	"testing"
)

// Every non-public range is refused, each at its edges, in its IPv4-mapped form too;
// public addresses next to them are not.
func TestPrivateRanges(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		private bool
	}{
		{"0.0.0.0", true}, {"0.255.255.255", true}, {"1.0.0.1", false},
		{"10.0.0.1", true}, {"11.0.0.1", false},
		{"100.64.0.1", true}, {"100.127.255.255", true}, {"100.128.0.1", false},
		{"127.0.0.1", true}, {"127.255.255.254", true},
		{"169.254.169.254", true}, {"169.255.0.1", false},
		{"172.16.0.1", true}, {"172.31.255.255", true}, {"172.32.0.1", false},
		{"192.0.0.8", true}, {"192.0.2.1", true}, {"192.0.3.1", false},
		{"192.88.99.1", true}, {"192.168.1.1", true}, {"192.169.0.1", false},
		{"198.18.0.1", true}, {"198.19.255.255", true}, {"198.20.0.1", false}, {"198.17.255.255", false},
		{"198.51.100.7", true}, {"203.0.113.7", true}, {"203.0.114.7", false},
		{"224.0.0.1", true}, {"239.255.255.255", true},
		{"240.0.0.1", true}, {"255.255.255.255", true},
		{"8.8.8.8", false}, {"93.184.216.34", false},
		{"::", true}, {"::1", true}, {"::7f00:1", true}, // IPv4-compatible 127.0.0.1
		{"::ffff:127.0.0.1", true}, {"::ffff:10.0.0.1", true}, {"::ffff:198.18.0.1", true},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::7f00:1", true}, {"64:ff9b::808:808", true}, {"64:ff9b:1::1", true},
		{"100::1", true},
		{"2001::1", true}, {"2001:0:4136:e378:8000:63bf:3fff:fdd2", true}, // Teredo
		{"2001:2::1", true}, {"2001:db8::1", true}, {"2001:4860:4860::8888", false},
		{"2002::1", true}, {"2002:7f00:1::1", true}, {"2003::1", false},
		{"3fff::1", true}, {"5f00::1", true},
		{"fc00::1", true}, {"fd12:3456::1", true},
		{"fe80::1", true}, {"febf::1", true}, {"fec0::1", true},
		{"ff02::1", true}, {"ff0e::1", true},
		{"2606:4700:4700::1111", false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := private(a); got != tc.private {
			t.Errorf("private(%s) = %v, want %v", tc.addr, got, tc.private)
		}
	}
}
