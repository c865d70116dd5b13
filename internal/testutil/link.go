package testutil

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Link is a TCP proxy between a process and a server on which a test makes the network
// sick: toxiproxy (github.com/Shopify/toxiproxy/v2), run inside the test process, so it
// can never be missing.
type Link struct {
	// Addr is the host:port to give the process instead of the server's.
	Addr  string
	proxy *toxiproxy.Proxy
}

var (
	toxiServerOnce sync.Once
	toxiServer     *toxiproxy.ApiServer
)

// StartLink starts a proxy to upstream (host:port) on a free loopback port, stopped at
// the end of the test.
func StartLink(t testing.TB, name, upstream string) *Link {
	t.Helper()
	toxiServerOnce.Do(func() {
		toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	p := toxiproxy.NewProxy(toxiServer, fmt.Sprintf("%s-%s", name, addr), addr, upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("link %s to %s: %v", name, upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Link{Addr: addr, proxy: p}
}

// Sicken adds a toxic to both directions of the link: kind is toxiproxy's toxic type
// ("latency", "timeout", "reset_peer", ...) with its attributes as JSON, such as
// `"latency": 300`. It returns an error rather than fail the test: it is called from
// the goroutine that runs a fault.
func (l *Link) Sicken(kind, attributes string) error {
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"%s-%s","type":%q,"stream":%q,"attributes":{%s}}`, kind, stream, kind, stream, attributes)
		if _, err := l.proxy.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			return fmt.Errorf("toxic %s: %w", js, err)
		}
	}
	return nil
}

// Heal removes every toxic: the link passes bytes again at once.
func (l *Link) Heal() { l.proxy.Toxics.ResetToxics(context.Background()) }
