package testutil

import (
	"net"
	"net/http"
	"time"
)

// ClientFrom returns an HTTP client whose connections come from ip, an address of the
// loopback range 127.0.0.0/8 (every one of which is this machine's), so that a test
// plays clients of several addresses, as a front keyed by address sees them. It keeps
// no idle connection; timeout bounds each request (0: none).
func ClientFrom(ip string, timeout time.Duration) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}
