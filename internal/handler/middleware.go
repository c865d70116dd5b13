package handler

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/admission"
	"seckill/internal/auth"
	"seckill/internal/ratelimit"
	"seckill/internal/sale"
)

// middleware is what every kind of route shares: the checks of the requests (panics,
// body limits, tokens, roles, rate limits, the bound of purchases in flight) and the
// reading of bodies (decode.go).
type middleware struct {
	tokens      *auth.Verifier
	perUser     *ratelimit.Limiter
	perIP       *ratelimit.Limiter
	gate        *admission.Gate
	metrics     *metrics
	now         func() time.Time
	bodyTimeout time.Duration
}

// recover turns a panic into 500 internal, with the details in the log only.
func (m *middleware) recover(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			respondError(c, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
		}
	}()
	c.Next()
}

// limitBody refuses bodies over 64 KiB on every route, whether it reads its body or
// not: at once when Content-Length says so; a body of unknown length (chunked) once
// read past 64 KiB, by wholeBody or by the route. An import of access codes may carry
// up to maxCodesBody, read once the caller is known to be the shop's.
func (m *middleware) limitBody(c *gin.Context) {
	if c.Request.Method == http.MethodPost && c.FullPath() == codesPath {
		if c.Request.ContentLength > maxCodesBody {
			respondError(c, errCodesTooLarge)
			return
		}
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxCodesBody)
		c.Next()
		return
	}
	if c.Request.ContentLength > maxBody {
		respondError(c, errTooLarge)
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, maxBody)
	c.Next()
}

// wholeBody reads the body whole, within the body timeout (readBody), before the route
// and the limits after it run: a route that reads no body refuses one over 64 KiB too,
// and a request counts toward the per-IP limit only once its body has arrived (an
// upload that stalls counts toward nothing, and is answered 408).
func (m *middleware) wholeBody(c *gin.Context) {
	if c.Request.ContentLength != 0 {
		b, err := m.readBody(c)
		if err == errTooLarge && c.FullPath() == codesPath {
			err = errCodesTooLarge
		}
		if err != nil {
			respondError(c, err)
			return
		}
		c.Request.Body, c.Request.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	}
	c.Next()
}

const identityKey = "identity"

// authenticate checks the bearer token and stores the caller. A request refused here
// has had its body, if any, left unread: the connection closes after the answer, so
// that the server does not wait for it either.
func (m *middleware) authenticate(c *gin.Context) {
	if err := m.identify(c); err != nil {
		if c.Request.ContentLength != 0 {
			c.Header("Connection", "close")
		}
		respondError(c, err)
		return
	}
	c.Next()
}

// bearer is the request's bearer token, "" for none.
func bearer(c *gin.Context) string {
	token, _ := bearerToken(c)
	return token
}

// bearerToken is the token of the request's Authorization header and whether it names
// the scheme Bearer, in any case (RFC 9110: a scheme is case-insensitive).
func bearerToken(c *gin.Context) (string, bool) {
	h := c.GetHeader("Authorization")
	const scheme = "Bearer "
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return h[len(scheme):], true
}

// identify checks the bearer token and stores the caller; errUnauthorized when there
// is no valid one.
func (m *middleware) identify(c *gin.Context) error {
	token, ok := bearerToken(c)
	if !ok || token == "" {
		return errUnauthorized
	}
	id, err := m.tokens.Verify(token, m.now())
	if err != nil {
		return errUnauthorized
	}
	c.Set(identityKey, id)
	return nil
}

func caller(c *gin.Context) sale.Caller {
	id := c.MustGet(identityKey).(auth.Identity)
	return sale.Caller{Buyer: id.Buyer, Admin: id.Admin, Service: id.Service}
}

func requireAdmin(c *gin.Context) {
	if !caller(c).Admin {
		respondError(c, errForbidden)
		return
	}
	c.Next()
}

// requireShop lets through the shop's back end (role service) and admins only: the
// routes of the shop's money (a refund).
func requireShop(c *gin.Context) {
	if id := caller(c); !id.Service && !id.Admin {
		respondError(c, errNotShop)
		return
	}
	c.Next()
}

// arrived runs a purchase or a seat (next, given its body) once it has arrived whole:
// its token verified, then its body read within the body timeout. Only then does it
// count toward the per-IP limit and take a place in flight, so an upload that is slow
// or stalled, with a token or without, holds no place and counts toward no bound. The
// place is taken last and held while next answers: past the process's or the sale's
// bound the purchase is refused 429 at once. A purchase whose token is refused counts
// toward no bound (401, and its body is not waited for); past its address's limit, of
// purchases that arrived, an address's purchases are refused before a token not
// verified already (Verified) costs a check.
func (m *middleware) arrived(next func(c *gin.Context, body []byte)) gin.HandlerFunc {
	return func(c *gin.Context) {
		ip := m.ipKey(c)
		if ok, wait := m.perIP.Admits(ip, m.now()); !ok && !m.tokens.Verified(bearer(c), m.now()) {
			c.Header("Connection", "close") // its body is not waited for
			respondError(c, &limited{wait})
			return
		}
		if err := m.identify(c); err != nil {
			// Its body is not waited for: the connection closes after the answer.
			c.Header("Connection", "close")
			respondError(c, err)
			return
		}
		body, err := m.readBody(c)
		if err != nil {
			respondError(c, err)
			return
		}
		if ok, wait := m.perIP.Allow(ip, m.now()); !ok && !caller(c).Service { // as allowIP
			respondError(c, &limited{wait})
			return
		}
		if caller(c).Service { // a shop's back end does not buy
			respondError(c, errNotBuyer)
			return
		}
		id, _ := saleOfPurchase(c, c.FullPath()) // 0 for a path naming no sale: answered 404
		if !m.gate.Enter(id) {
			m.metrics.shed.Inc()
			respondError(c, errOverloaded)
			return
		}
		defer m.gate.Leave(id)
		next(c, body)
	}
}

// requireBuyer refuses a shop's back end (role service) the routes that buy.
func requireBuyer(c *gin.Context) {
	if caller(c).Service {
		respondError(c, errNotBuyer)
		return
	}
	c.Next()
}

// limitIP limits requests per client IP. A shop's back end confirms the payments of a
// whole crowd from one address, so a request the limit refuses still passes when it
// carries a valid service token (the check costs a verification only for requests
// over the limit, and verified tokens are cached).
func (m *middleware) limitIP(c *gin.Context) {
	if m.allowIP(c) {
		c.Next()
	}
}

// ipKey is the request's key of the per-IP limit, "" while the limit is off (finding
// the client IP costs work).
func (m *middleware) ipKey(c *gin.Context) string {
	if !m.perIP.On() {
		return ""
	}
	return ratelimit.ClientKey(c.ClientIP())
}

// allowIP counts the request against its client IP's limit; past it, it answers 429
// and returns false.
func (m *middleware) allowIP(c *gin.Context) bool {
	if !m.perIP.On() {
		return true
	}
	if ok, wait := m.perIP.Allow(ratelimit.ClientKey(c.ClientIP()), m.now()); !ok && !m.fromService(c) {
		respondError(c, &limited{wait})
		return false
	}
	return true
}

// limitUser limits requests per user; a shop's back end (role service) is not a user.
func (m *middleware) limitUser(c *gin.Context) {
	if caller(c).Service || m.allow(c, m.perUser, userKey(c)) {
		c.Next()
	}
}

func userKey(c *gin.Context) string { return string(caller(c).Buyer) }

// allow counts a request of key against l; past the limit it answers 429 with
// Retry-After and returns false.
func (m *middleware) allow(c *gin.Context, l *ratelimit.Limiter, key string) bool {
	if ok, wait := l.Allow(key, m.now()); !ok {
		respondError(c, &limited{wait})
		return false
	}
	return true
}

// purchaseError answers a purchase that did not happen. The attempts that reached
// Redis were counted against the user's allowance by the reserve script; one this
// process answered by itself (bad input, the sold-out flag) counts against its share
// here, and past it the answer is 429. refused is why the purchase's pass was not
// valid (nil for none): it words a not_admitted answer once err has been counted.
func (m *middleware) purchaseError(c *gin.Context, err, refused error) {
	if answeredInProcess(err) && !m.allow(c, m.perUser, userKey(c)) {
		return
	}
	respondError(c, notAdmitted(err, refused))
}

// fromService reports whether the request carries a valid token of role service.
func (m *middleware) fromService(c *gin.Context) bool {
	token, ok := bearerToken(c)
	if !ok || token == "" {
		return false
	}
	id, err := m.tokens.Verify(token, m.now())
	return err == nil && id.Service
}

// limited is errRateLimited with the wait until the next request is allowed.
type limited struct{ wait time.Duration }

func (e *limited) Error() string             { return errRateLimited.Error() }
func (e *limited) Unwrap() error             { return errRateLimited }
func (e *limited) RetryAfter() time.Duration { return e.wait }
