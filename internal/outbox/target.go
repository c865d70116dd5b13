package outbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrPrivateTarget is a webhook address on loopback or a private network, refused
// unless SECKILL_WEBHOOK_ALLOW_PRIVATE is true: the worker would otherwise post to the
// inside of its own network on an admin's say.
var ErrPrivateTarget = errors.New("a loopback or private network address")

// private reports the addresses a webhook may not reach unless private targets are
// allowed: loopback, private (RFC 1918, fc00::/7), link-local, shared (100.64.0.0/10),
// unspecified and multicast.
func private(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || shared.Contains(a)
}

// allowHint ends the message of a refused private URL.
const allowHint = "; SECKILL_WEBHOOK_ALLOW_PRIVATE=true allows it"

var shared = netip.MustParsePrefix("100.64.0.0/10") // carrier-grade NAT

// checkURL checks a webhook URL: absolute http or https, a host, no user or password,
// at most 2048 bytes; unless allowPrivate, every address its host resolves to must be
// public. The answer is a sentence about the field url.
func checkURL(ctx context.Context, resolver *net.Resolver, raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return &FieldError{"url", "is required"}
	case len(raw) > 2048:
		return &FieldError{"url", "must be at most 2048 bytes"}
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return &FieldError{"url", "must be an absolute http or https URL"}
	case u.User != nil:
		return &FieldError{"url", "must not carry a user or password"}
	case u.Fragment != "":
		return &FieldError{"url", "must not have a fragment"}
	case allowPrivate:
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return &FieldError{"url", "must not point at " + ErrPrivateTarget.Error() + allowHint}
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return &FieldError{"url", fmt.Sprintf("has a host that does not resolve (%s)", host)}
	}
	for _, a := range addrs {
		if !private(a) {
			continue
		}
		resolved := ""
		if a = a.Unmap(); a.String() != host { // the host is a name, not the address itself
			resolved = fmt.Sprintf(" (%s is %s)", host, a)
		}
		return &FieldError{"url", fmt.Sprintf("must not point at %s%s%s", ErrPrivateTarget, resolved, allowHint)}
	}
	return nil
}

// refusePrivate is a net.Dialer Control function that refuses to connect to a private
// address: a host that resolved to a public address when its webhook was made may
// resolve to a private one later (DNS rebinding), so the check is made again on the
// address each connection goes to.
func refusePrivate(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook target %q: %w", address, err)
	}
	if private(ap.Addr()) {
		return fmt.Errorf("webhook target %s is %w", ap.Addr(), ErrPrivateTarget)
	}
	return nil
}

// FieldError is a request value the webhooks refuse, named by its JSON field.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Message }
