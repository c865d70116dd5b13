package handler

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// corsHeaders are the request headers the API reads, which a shop's page may send
// from another origin.
const corsHeaders = "Authorization, Content-Type, Idempotency-Key, X-Sale-Pass, X-Access-Code"

// corsMaxAge is how long a browser may keep a preflight's answer, in seconds:
// Chromium's cap. Each answer still carries its own Access-Control-Allow-Origin, so
// an origin taken off the list is refused at its next request, cached preflight or not.
const corsMaxAge = "7200"

// cors lets the pages of the listed origins (SECKILL_CORS_ORIGINS) call /api/v1 from a
// browser. It is a middleware of its own rather than github.com/rs/cors because a
// preflight is answered with the methods the router has for its path, and a preflight
// for a path the router does not have is the usual 404.
type cors struct {
	// allow holds each listed origin's Access-Control-Allow-Origin value, made once: the
	// answers share these slices (and varyOrigin, exposeRetryAfter) instead of
	// allocating their own on every request.
	allow map[string][]string
}

var (
	varyOrigin       = []string{"Origin"}
	exposeRetryAfter = []string{"Retry-After"}
)

// newCORS returns nil for an empty list: no middleware, no cost.
func newCORS(origins []string) *cors {
	if len(origins) == 0 {
		return nil
	}
	c := &cors{allow: map[string][]string{}}
	for _, o := range origins {
		c.allow[o] = []string{o}
	}
	return c
}

func apiPath(c *gin.Context) bool { return strings.HasPrefix(c.Request.URL.Path, "/api/v1/") }

// headers runs on every request before the body limit, the admission gate, the limits and
// authentication, so that every answer to a listed origin is readable by its page,
// refusals included: a 429's Retry-After is exposed. Answers of /api/v1 vary by Origin
// whoever asks, so a cache never hands one origin's answer to another.
func (cs *cors) headers(c *gin.Context) {
	if apiPath(c) {
		h := c.Writer.Header()
		h["Vary"] = varyOrigin // the first Vary: nothing before sets one
		if allow, ok := cs.allow[c.Request.Header.Get("Origin")]; ok {
			h["Access-Control-Allow-Origin"] = allow
			h["Access-Control-Expose-Headers"] = exposeRetryAfter
		}
	}
	c.Next()
}

// preflight answers a listed origin's preflight (OPTIONS with
// Access-Control-Request-Method) with 204 and reports true. It is called where the
// router found the path but no OPTIONS route, after gin has put the path's methods in
// Allow: a preflight never reaches a route's middleware, so it touches no Redis and
// counts against no limit. Any other OPTIONS, and a preflight from an origin not
// listed, gets the usual 405 (with no CORS header: the browser blocks the call).
func (cs *cors) preflight(c *gin.Context) bool {
	if cs == nil || c.Request.Method != http.MethodOptions || c.Request.Header.Get("Access-Control-Request-Method") == "" ||
		!apiPath(c) || cs.allow[c.Request.Header.Get("Origin")] == nil {
		return false
	}
	h := c.Writer.Header()
	h.Set("Access-Control-Allow-Methods", h.Get("Allow"))
	h.Set("Access-Control-Allow-Headers", corsHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	c.AbortWithStatus(http.StatusNoContent)
	return true
}
