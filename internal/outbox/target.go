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

// ErrPrivateTarget is a webhook address that is not public (loopback, a private
// network, any special-purpose range), refused unless SECKILL_WEBHOOK_ALLOW_PRIVATE is
// true: the worker would otherwise post to the inside of its own network on an
// admin's say.
var ErrPrivateTarget = errors.New("a loopback or private network address")

// private reports the addresses a webhook may not reach unless private targets are
// allowed: every address of nonPublic, an IPv4-mapped IPv6 address (::ffff:a.b.c.d)
// judged by its IPv4 address.
func private(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range nonPublic {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// nonPublic are the ranges that are not the public internet's: IANA's special-purpose
// address registries (RFC 6890 and later) less what is globally reachable, and the
// IPv6 ranges that embed an IPv4 address the API cannot see through (NAT64, 6to4,
// Teredo, IPv4-compatible), which could name an inside address.
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		"0.0.0.0/8",       // this network
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // shared (carrier-grade NAT)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local (cloud metadata services)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay anycast
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, and the limited broadcast address
		"::/96",           // unspecified, loopback, IPv4-compatible
		"64:ff9b::/96",    // NAT64, well-known prefix
		"64:ff9b:1::/48",  // NAT64, local use
		"100::/64",        // discard-only
		"2001::/23",       // IETF protocol assignments (Teredo, benchmarking, ORCHID)
		"2001:db8::/32",   // documentation
		"2002::/16",       // 6to4
		"3fff::/20",       // documentation
		"5f00::/16",       // segment routing
		"fc00::/7",        // unique local
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local
		"ff00::/8",        // multicast
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// allowHint ends the message of a refused private URL.
const allowHint = "; SECKILL_WEBHOOK_ALLOW_PRIVATE=true allows it"

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
