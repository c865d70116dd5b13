package handler

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"seckill/internal/accesscode"
)

// AccessCodes are the sales' access codes, for the shop (internal/accesscode).
type AccessCodes interface {
	Add(ctx context.Context, activityID int64, codes []string) (int, error)
	Generate(ctx context.Context, activityID int64, count int) ([]string, error)
	List(ctx context.Context, activityID int64, after string, limit int) ([]accesscode.Code, error)
	Revoke(ctx context.Context, activityID int64, code string) error
}

var _ AccessCodes = (*accesscode.Codes)(nil)

// codesPath is the route of a sale's codes; an import on it may carry maxCodesBody.
const codesPath = "/api/v1/admin/activities/:id/access-codes"

// maxCodesBody bounds an import's body: 100,000 codes of 64 bytes, quoted and parted
// by commas, with room to spare.
const maxCodesBody = 8 << 20

// accessCodeHeader is the header a buyer presents a code in.
const accessCodeHeader = "X-Access-Code"

type codesRequest struct {
	Count *int      `json:"count"`
	Codes *[]string `json:"codes"`
}

// addCodes answers POST .../access-codes: {"count"} makes that many codes and answers
// them, {"codes"} imports the shop's own and answers how many were new.
func (b *backOffice) addCodes(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	var req codesRequest
	if err := b.mw.decode(c, &req); err != nil {
		if err == errTooLarge {
			err = errCodesTooLarge
		}
		respondError(c, err)
		return
	}
	switch {
	case req.Count != nil && req.Codes != nil:
		respondError(c, &invalidRequest{"give count (codes made here) or codes (the shop's own), not both"})
	case req.Count != nil:
		codes, err := b.codes.Generate(c.Request.Context(), id, *req.Count)
		if err != nil {
			respondError(c, err)
			return
		}
		c.JSON(http.StatusCreated, gin.H{"codes": codes})
	case req.Codes != nil:
		added, err := b.codes.Add(c.Request.Context(), id, *req.Codes)
		if err != nil {
			respondError(c, err)
			return
		}
		c.JSON(http.StatusCreated, gin.H{"added": added})
	default:
		respondError(c, required("count or codes"))
	}
}

// listCodes answers a page of a sale's codes. Its next is a cursor of the listing,
// signed, holding the page's last code; a page that is empty has none (as a page of
// orders).
func (b *backOffice) listCodes(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	q := c.Request.URL.Query()
	limit := accesscode.DefaultPage
	if q.Has("limit") {
		var err error
		if limit, err = strconv.Atoi(q.Get("limit")); err != nil {
			limit = 0 // not a number: refused with the range, as one out of it
		}
	}
	scope := fmt.Sprintf("access codes of sale %d", id)
	after := ""
	if q.Has("after") {
		if after, ok = b.cursors.Open(scope, q.Get("after")); !ok {
			respondError(c, &invalidRequest{"after must be the next of the page before, of the same sale's codes"})
			return
		}
	}
	codes, err := b.codes.List(c.Request.Context(), id, after, limit)
	if err != nil {
		respondError(c, err)
		return
	}
	var next *string
	if len(codes) > 0 {
		cur := b.cursors.Issue(scope, codes[len(codes)-1].Code)
		next = &cur
	}
	c.JSON(http.StatusOK, gin.H{"codes": codes, "next": next})
}

// revokeCode answers DELETE .../access-codes/{code}: 204 once the code is revoked (also
// again), 404 for a code the sale never had. The code is the rest of the path, so one
// holding "/" (sent as %2F) is named whole.
func (b *backOffice) revokeCode(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	code := strings.TrimPrefix(c.Param("code"), "/")
	if err := b.codes.Revoke(c.Request.Context(), id, code); err != nil {
		respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// presentedCode reads the code a buyer presents (X-Access-Code), "" for none; a code
// no code can be (accesscode.ErrMalformed) or the header sent twice is an error.
func presentedCode(c *gin.Context) (string, error) {
	if len(c.Request.Header.Values(accessCodeHeader)) > 1 {
		return "", errCodeRepeated
	}
	code := c.GetHeader(accessCodeHeader)
	return code, accesscode.CheckPresented(code)
}
