package handler

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/internal/accesscode"
	"seckill/internal/outbox"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/waitingroom"
)

// Errors the handlers themselves detect.
var (
	errUnauthorized    = errors.New("a valid bearer token is required")
	errForbidden       = errors.New("this route is for admins")
	errNotBuyer        = errors.New("this route is for buyers and admins, not for a service token")
	errNotShop         = errors.New("this route is for the shop's back end (a service token) and admins")
	errTooLarge        = errors.New("the request body is larger than 64 KiB")
	errCodesTooLarge   = errors.New("the request body is larger than 8 MiB: import at most 100,000 codes a call")
	errNoRoute         = errors.New("no such route")
	errMethod          = errors.New("method not allowed on this route")
	errRateLimited     = errors.New("too many requests; slow down")
	errBadPathActivity = errors.New("no such activity")
	errOverloaded      = errors.New("too many purchases at once here; try again in a second")
	errBodyTimeout     = errors.New("the request body did not arrive in time")
)

// invalidRequest is a 400 with its own sentence.
type invalidRequest struct{ msg string }

func (e *invalidRequest) Error() string { return e.msg }

var (
	errNotUTF8        = &invalidRequest{"the body must be JSON in UTF-8"}
	errInvalidIdemKey = &invalidRequest{"Idempotency-Key must be 1 to 64 characters of A-Z, a-z, 0-9, _ and -"}
	errCodeRepeated   = &invalidRequest{"X-Access-Code must be sent once: one code a request"}
	errMalformedJSON  = &invalidRequest{"the body must be a JSON object"}
	errUnreadableBody = &invalidRequest{"the request body could not be read"}
	errBadGroupLimit  = &invalidRequest{"limit must be an integer from 1 to " + strconv.Itoa(maxListedGroups)}
	errNoActivityID   = &invalidRequest{"activity_id is required to list a sale's orders (with status, after, limit, " +
		"or a service token): the sale's id"}
	errBadActivityID = &invalidRequest{"activity_id must be a sale's id, a positive integer"}
	errBadCursor     = &invalidRequest{"after must be the next of the page before, of the same listing " +
		"(the same activity_id and status)"}
)

// mapping decides the status and code of the errors that are answers.
var mapping = []struct {
	err    error
	status int
	code   string
}{
	{errUnauthorized, http.StatusUnauthorized, "unauthorized"},
	{errForbidden, http.StatusForbidden, "forbidden"},
	{errNotBuyer, http.StatusForbidden, "forbidden"},
	{errNotShop, http.StatusForbidden, "forbidden"},
	{errTooLarge, http.StatusRequestEntityTooLarge, "payload_too_large"},
	{errCodesTooLarge, http.StatusRequestEntityTooLarge, "payload_too_large"},
	{errBodyTimeout, http.StatusRequestTimeout, "request_timeout"},
	{errNoRoute, http.StatusNotFound, "not_found"},
	{errMethod, http.StatusMethodNotAllowed, "method_not_allowed"},
	{errRateLimited, http.StatusTooManyRequests, "rate_limited"},
	{sale.ErrRateLimited, http.StatusTooManyRequests, "rate_limited"},
	{errBadPathActivity, http.StatusNotFound, "not_found"},
	{sale.ErrNotFound, http.StatusNotFound, "not_found"},
	{sale.ErrNotStarted, http.StatusConflict, "sale_not_started"},
	{sale.ErrEnded, http.StatusConflict, "sale_ended"},
	{sale.ErrArchived, http.StatusConflict, "sale_archived"},
	{sale.ErrSoldOut, http.StatusConflict, "sold_out"},
	{sale.ErrLimitExceeded, http.StatusConflict, "limit_exceeded"},
	{sale.ErrQuantityOverLimit, http.StatusBadRequest, "invalid_request"},
	{sale.ErrNoVariant, http.StatusBadRequest, "invalid_request"},
	{sale.ErrNotSoldOut, http.StatusConflict, "not_sold_out"},
	{sale.ErrNoWaitlist, http.StatusConflict, "no_waitlist"},
	{sale.ErrKeyReused, http.StatusUnprocessableEntity, "idempotency_key_reused"},
	{sale.ErrBusy, http.StatusTooManyRequests, "busy"},
	{sale.ErrNoGroup, http.StatusNotFound, "not_found"},
	{sale.ErrGroupSale, http.StatusConflict, "group_sale"},
	{sale.ErrNotGroupSale, http.StatusConflict, "not_a_group_sale"},
	{sale.ErrGroupClosed, http.StatusConflict, "group_closed"},
	{sale.ErrGroupFull, http.StatusConflict, "group_full"},
	{sale.ErrAlreadyInGroup, http.StatusConflict, "already_in_group"},
	{sale.ErrPaymentByShop, http.StatusForbidden, "payment_by_shop"},
	{store.ErrNotPayable, http.StatusConflict, "order_not_payable"},
	{store.ErrExpired, http.StatusConflict, "order_expired"},
	{store.ErrNotCancellable, http.StatusConflict, "order_not_cancellable"},
	{store.ErrNotRefundable, http.StatusConflict, "order_not_refundable"},
	{sale.ErrNotAdmitted, http.StatusConflict, "not_admitted"},
	{sale.ErrCodeInvalid, http.StatusForbidden, "access_code_invalid"},
	{sale.ErrCodeTaken, http.StatusForbidden, "access_code_taken"},
	{accesscode.ErrMalformed, http.StatusBadRequest, "invalid_request"},
	{accesscode.ErrNoCode, http.StatusNotFound, "not_found"},
	{accesscode.ErrSeveralBuckets, http.StatusBadRequest, "invalid_request"},
	{waitingroom.ErrNoSale, http.StatusNotFound, "not_found"},
	{waitingroom.ErrNoTicket, http.StatusNotFound, "not_found"},
	{waitingroom.ErrNoWaitingRoom, http.StatusConflict, "no_waiting_room"},
	{waitingroom.ErrNotOpen, http.StatusConflict, "line_not_open"},
	{waitingroom.ErrChallengeRequired, http.StatusBadRequest, "challenge_required"},
	{waitingroom.ErrChallengeFailed, http.StatusForbidden, "challenge_failed"},
	{sale.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{store.ErrSchemaPending, http.StatusServiceUnavailable, "unavailable"},
	{errOverloaded, http.StatusTooManyRequests, "rate_limited"}, // too many at once here, not storage down
	{outbox.ErrNotFound, http.StatusNotFound, "not_found"},
	{errNoWebhooks, http.StatusServiceUnavailable, "unavailable"},
}

// respondError writes the error body for err and ends the request. It is the one
// place where errors become statuses. Errors that are not answers become 503 when a
// storage server could not be reached, else 500 with nothing internal in the body.
func respondError(c *gin.Context, err error) {
	if err == sale.ErrSoldOutFlagged { // most of a flash crowd: its body is written once
		writeError(c, soldOutFlagged.status, soldOutFlagged.code, soldOutFlagged.body)
		return
	}
	var fe *sale.FieldError
	var wfe *outbox.FieldError
	var cfe *accesscode.FieldError
	var ir *invalidRequest
	switch {
	case errors.As(err, &fe): // starts with the field's JSON name, kept as it is spelled
		abort(c, http.StatusBadRequest, "invalid_request", period(fe.Error()))
		return
	case errors.As(err, &wfe):
		abort(c, http.StatusBadRequest, "invalid_request", period(wfe.Error()))
		return
	case errors.As(err, &cfe):
		abort(c, http.StatusBadRequest, "invalid_request", period(cfe.Error()))
		return
	case errors.As(err, &ir):
		abort(c, http.StatusBadRequest, "invalid_request", period(ir.msg))
		return
	}
	for _, m := range mapping {
		if errors.Is(err, m.err) {
			if m.status == http.StatusTooManyRequests {
				c.Header("Retry-After", retryAfter(err))
			}
			if m.status == http.StatusServiceUnavailable && !logged(err) {
				slog.WarnContext(requestContext(c), "unavailable", "path", c.FullPath(), "err", err)
			}
			abort(c, m.status, m.code, message(err, m.err))
			return
		}
	}
	if unreachable(err) {
		if !logged(err) {
			slog.WarnContext(requestContext(c), "storage unreachable", "path", c.FullPath(), "err", err)
		}
		abort(c, http.StatusServiceUnavailable, "unavailable", sentence(sale.ErrUnavailable.Error()))
		return
	}
	if !logged(err) {
		slog.ErrorContext(requestContext(c), "internal error", "path", c.FullPath(), "err", err)
	}
	abort(c, http.StatusInternalServerError, "internal", "Something went wrong on our side.")
}

// logged reports an error said in the log where it happened: a snapshot's failed load
// (internal/snapshot), which answers every request until the next load, is logged
// once, not once per request.
func logged(err error) bool {
	var l interface{ Logged() bool }
	return errors.As(err, &l) && l.Logged()
}

// retryAfter is the Retry-After header for a 429: the whole seconds err says to wait
// (RetryAfter), at least 1.
func retryAfter(err error) string {
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) {
		return "1"
	}
	return strconv.Itoa(max(1, int((ra.RetryAfter()+time.Second-1)/time.Second)))
}

// errorCodeKey holds the error code of the answer, for the request metrics.
const errorCodeKey = "error_code"

// abort ends the request with the contract's error body. The body is written by hand:
// most of a flash crowd is answered with an error (sold out), and encoding/json's
// reflection was a tenth of that answer's CPU (measured: docs/performance.md's git
// history).
func abort(c *gin.Context, status int, code, msg string) {
	writeError(c, status, code, errorJSON(code, msg))
}

// errorJSON is the contract's error body.
func errorJSON(code, msg string) []byte {
	b := make([]byte, 0, 40+len(code)+len(msg))
	b = append(b, `{"error":{"code":`...)
	b = appendJSONString(b, code)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, msg)
	return append(b, "}}"...)
}

func writeError(c *gin.Context, status int, code string, body []byte) {
	if status == http.StatusServiceUnavailable {
		c.Header("Retry-After", "1") // a failover, a rebuild, a restart: seconds, not minutes
	}
	if status == http.StatusRequestTimeout { // the rest of the body may still be on its way
		c.Header("Connection", "close")
	}
	if (status == http.StatusNotFound || status == http.StatusConflict) && c.GetBool(sharedKey) {
		share(c.Writer.Header()) // as its 200 would be (sharedError)
	}
	c.Set(errorCodeKey, code)
	c.Abort()
	c.Data(status, "application/json; charset=utf-8", body)
}

// soldOutFlagged is the answer to sale.ErrSoldOutFlagged, worked out once by the
// mapping as any other error's.
var soldOutFlagged = func() (a struct {
	status int
	code   string
	body   []byte
}) {
	for _, m := range mapping {
		if errors.Is(sale.ErrSoldOutFlagged, m.err) {
			a.status, a.code = m.status, m.code
			a.body = errorJSON(m.code, message(sale.ErrSoldOutFlagged, m.err))
			return a
		}
	}
	panic("sale.ErrSoldOutFlagged is not in the mapping")
}()

// appendJSONString appends s as a JSON string, escaped as encoding/json escapes it
// (quotes, backslashes, control characters, <, > and &, U+2028 and U+2029; invalid
// UTF-8 becomes U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c == '\b':
				b = append(b, '\\', 'b')
			case c == '\f':
				b = append(b, '\\', 'f')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// message is the sentence for a mapped error: its detail for the buyer if it has one.
func message(err, sentinel error) string {
	var d *sale.DetailError
	if errors.As(err, &d) {
		return sentence(d.Err.Error() + ": " + d.Detail)
	}
	return sentence(sentinel.Error())
}

// sentence capitalises s and ends it with a period.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return period(strings.ToUpper(s[:1]) + s[1:])
}

func period(s string) string {
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// unreachable reports errors of a Redis or MySQL that cannot be reached in time.
func unreachable(err error) bool {
	var ne net.Error
	var me *mysql.MySQLError
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		// a transaction database/sql ended when its deadline passed (config.MySQL)
		errors.Is(err, sql.ErrTxDone) || errors.Is(err, sql.ErrConnDone) ||
		redis.HasErrorPrefix(err, "LOADING") || // restarting Redis still reading its AOF
		// a cluster in a failover or a migration, past the client's redirects: a read of
		// several slots (a sale of several buckets) meets it more often than a script
		moved || ask || redis.IsTryAgainError(err) || redis.HasErrorPrefix(err, "CLUSTERDOWN") ||
		redis.HasErrorPrefix(err, "MASTERDOWN") || redis.HasErrorPrefix(err, "READONLY") ||
		(errors.As(err, &me) && me.Number == 1040) // too many connections
}

// answeredInProcess reports the purchase answers this process gives without Redis: bad
// input and the sold-out flag.
func answeredInProcess(err error) bool {
	var fe *sale.FieldError
	var ir *invalidRequest
	return sale.AnsweredInProcess(err) || errors.As(err, &fe) || errors.As(err, &ir) ||
		errors.Is(err, errBadPathActivity) || errors.Is(err, errTooLarge)
}

// requestContext is the request's context, for the log lines of its answer (they carry
// its trace); the background for a context made without a request (tests).
func requestContext(c *gin.Context) context.Context {
	if c.Request == nil {
		return context.Background()
	}
	return c.Request.Context()
}
