package handler

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/sale"
	"seckill/internal/waitingroom"
)

// The public reads a crowd repeats (the sale list, a sale, a line's status) are the same
// for everyone, so a shared cache (the project's nginx front, a CDN) may keep them for a
// second and answer the crowd in the APIs' place, and for one second more answer the
// copy it has while one request gets the next (stale-while-revalidate), so that a crowd
// is not all sent on at once when a copy expires; past that second a copy is never
// answered. Every other answer of /api/v1 is never to be kept, nor is any answer to a
// request with a token.
var (
	sharedCache  = []string{"public, max-age=1, stale-while-revalidate=1"}
	privateCache = []string{"private, no-store"}
)

// noStore marks every answer of /api/v1 as never to be kept by any cache; the public
// reads replace it (answerShared, sharedError) for a request without a token. The
// engine makes no answer of its own past it (Routes: no redirects of a trailing slash).
func noStore(c *gin.Context) {
	if apiPath(c) {
		c.Writer.Header()["Cache-Control"] = privateCache
	}
	c.Next()
}

// share lets a shared cache keep an answer for a second: Cache-Control for any cache,
// and for the project's nginx front (which keeps times in whole seconds, so max-age=1
// would keep it for 1 to 2 s) X-Accel-Expires, the end of the second of the clock it is
// in, or of the next one past its middle. Under a crowd the front's copy then expires
// as a second begins, when this API's snapshots (internal/snapshot) do too, and the
// front's next request gets a fresh answer; clocks a little apart (under half a
// second) change nothing. nginx keeps X-Accel-Expires to itself.
func share(h http.Header) {
	h["Cache-Control"] = sharedCache
	h["X-Accel-Expires"] = accelExpires(time.Now())
}

// accelExpires is X-Accel-Expires at now: "@" and the second it ends at, kept for the
// second it holds for (every answer of a second shares one value).
func accelExpires(now time.Time) []string {
	at := now.Add(500 * time.Millisecond).Unix()
	if last := lastAccel.Load(); last != nil && last.at == at {
		return last.value
	}
	v := &accel{at: at, value: []string{"@" + strconv.FormatInt(at, 10)}}
	lastAccel.Store(v)
	return v.value
}

type accel struct {
	at    int64
	value []string
}

var lastAccel atomic.Pointer[accel]

// sharable reports whether a shared cache may keep the answer to c: it carries no token.
func sharable(c *gin.Context) bool { return c.Request.Header.Get("Authorization") == "" }

// sharedKey marks a public read's request whose error answer a shared cache may keep
// (writeError: a 404 or 409).
const sharedKey = "shared"

// answerShared answers 200 with v as JSON, with an ETag, for a shared cache to keep a
// second (unless the request carries a token); 304 and no body when the request's
// If-None-Match holds the ETag.
func answerShared(c *gin.Context, v any) {
	e, err := encode(v)
	if err != nil {
		respondError(c, err)
		return
	}
	writeShared(c, e)
}

// encoded is an answer's JSON and its ETag.
type encoded struct {
	body []byte
	etag []string // the header's value
}

func encode(v any) (*encoded, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	return &encoded{body: body, etag: []string{`"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`}}, nil
}

// writeShared answers e as answerShared does.
func writeShared(c *gin.Context, e *encoded) {
	h := c.Writer.Header()
	h["Etag"] = e.etag
	if sharable(c) {
		share(h)
	}
	if inm := c.Request.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, e.etag[0]) {
		c.AbortWithStatus(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", e.body)
}

// answers keeps, per sale, the last answer of a route whose values compare (a line's
// status) encoded: a crowd reading one snapshot is answered with the bytes encoded for
// the first of it, not encoded again per request.
type answers[T comparable] struct{ last sync.Map } // activity id -> *answer[T]

type answer[T comparable] struct {
	v T
	*encoded
}

// of returns v of the sale id encoded.
func (a *answers[T]) of(id int64, v T) (*encoded, error) {
	if last, ok := a.last.Load(id); ok && last.(*answer[T]).v == v {
		return last.(*answer[T]).encoded, nil
	}
	e, err := encode(v)
	if err != nil {
		return nil, err
	}
	a.last.Store(id, &answer[T]{v: v, encoded: e})
	return e, nil
}

// etagMatches reports whether an If-None-Match header holds etag: "*", or etag in its
// list, weak or strong alike (RFC 9110's weak comparison).
func etagMatches(header, etag string) bool {
	for _, e := range strings.Split(header, ",") {
		e = strings.TrimSpace(e)
		if e == "*" || strings.TrimPrefix(e, "W/") == etag {
			return true
		}
	}
	return false
}

// sharedError answers err as respondError does, and lets a shared cache keep a 404 or
// a 409 of a public read for a second, as it keeps its 200.
func sharedError(c *gin.Context, err error) {
	if sharable(c) {
		c.Set(sharedKey, true)
	}
	respondError(c, err)
}

// sharedByActivity answers what get returns for the activity in the path as a public
// read (answerShared, sharedError).
func sharedByActivity[T any](get func(context.Context, int64) (T, error)) gin.HandlerFunc {
	return activityRoute(get, answerShared, sharedError)
}

// lineStatus answers the public status of a sale's line (lineStatusOf), each snapshot
// of it encoded once.
func (sr *saleRoutes) lineStatus(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		sharedError(c, errBadPathActivity)
		return
	}
	s, err := sr.lineStatusOf(c.Request.Context(), id)
	if err == nil {
		var e *encoded
		if e, err = sr.statuses.of(id, s); err == nil {
			writeShared(c, e)
			return
		}
	}
	sharedError(c, err)
}

// lineStatusOf is the public status of a sale's line: the sale from the public list's
// snapshot (no sale: 404; no line: 409 no_waiting_room), its line's from the line's
// snapshot, or an archived sale's from the snapshot of what its archive kept (its
// figures as of its archive); none asks a store per request.
func (sr *saleRoutes) lineStatusOf(ctx context.Context, id int64) (waitingroom.Status, error) {
	a, err := sr.svc.PublicActivity(ctx, id)
	switch {
	case err != nil:
		return waitingroom.Status{}, err
	case !a.WaitingRoom:
		return waitingroom.Status{}, waitingroom.ErrNoWaitingRoom
	case a.ArchivedAt != nil: // its line left Redis with it: over, as the archive kept it
		s := waitingroom.Status{ActivityID: id, State: waitingroom.StateEnded, AdmitPerSecond: int64(a.AdmitPerSecond),
			UnitsLeft: a.StockAvailable, AsOf: *a.ArchivedAt}
		if sr.funnels != nil {
			l, err := sr.funnels.ArchivedLine(ctx, id)
			if err != nil {
				return waitingroom.Status{}, err
			}
			s.AdmittedThrough, s.Joined, s.Admitted = l.AdmittedThrough, l.Joined, l.Admitted
		}
		return s, nil
	}
	s, err := sr.rooms.Status(ctx, id)
	if errors.Is(err, waitingroom.ErrNoSale) { // MySQL has it (the list), Redis not: its rebuild brings it back
		return waitingroom.Status{}, fmt.Errorf("%w: sale %d is missing in Redis", sale.ErrUnavailable, id)
	}
	return s, err
}
