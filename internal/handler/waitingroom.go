package handler

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/internal/altcha"
	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/sale"
	"seckill/internal/waitingroom"
)

// Rooms is what the handlers need from internal/waitingroom: the sales' waiting rooms.
type Rooms interface {
	Challenge(ctx context.Context, activityID int64) (altcha.Challenge, error)
	Join(ctx context.Context, activityID int64, who buyer.ID, solution, code string) (waitingroom.Ticket, bool, error)
	Ticket(ctx context.Context, activityID int64, who buyer.ID) (waitingroom.Ticket, error)
	Figures(ctx context.Context, activityID int64) (waitingroom.Figures, error)
	Status(ctx context.Context, activityID int64) (waitingroom.Status, error)
}

var _ Rooms = (*waitingroom.Rooms)(nil)

// PassHeader carries a buyer's sale pass on a purchase of a waiting-room sale.
const PassHeader = "X-Sale-Pass"

// roomRequest is the waiting room's fields of a create or patch body.
type roomRequest struct {
	WaitingRoom     *bool `json:"waiting_room"`
	AdmitPerSecond  *int  `json:"admit_per_second"`
	PassTTLSeconds  *int  `json:"pass_ttl_seconds"`
	PrequeueSeconds *int  `json:"prequeue_seconds"`
	Challenge       *bool `json:"challenge"`
	ChallengeCost   *int  `json:"challenge_cost"`
}

func (r roomRequest) patch() sale.RoomPatch {
	return sale.RoomPatch{WaitingRoom: r.WaitingRoom, AdmitPerSecond: r.AdmitPerSecond,
		PassTTLSeconds: r.PassTTLSeconds, PrequeueSeconds: r.PrequeueSeconds, Challenge: r.Challenge,
		ChallengeCost: r.ChallengeCost}
}

// admission reads the X-Sale-Pass header of a purchase into r: the pass's expiry when
// it is signed by us for the caller and the sale, checked in this process with no
// storage call; the reserve script judges the expiry by Redis' clock. No header, or a pass that is not valid (the reason is returned, to word the
// answer), buys nothing in a waiting-room sale: the reserve script refuses it with
// not_admitted, taking nothing, and a sale without a room ignores the header.
func (pr *purchaseRoutes) admission(c *gin.Context, r *sale.BuyRequest) error {
	p := c.GetHeader(PassHeader)
	if p == "" {
		return nil
	}
	exp, err := pr.passes.Check(p, r.Buyer, r.ActivityID)
	if err != nil {
		return err
	}
	r.PassExpires = exp
	return nil
}

// notAdmitted words a not_admitted answer with why the pass sent was refused.
func notAdmitted(err, why error) error {
	if why == nil || !errors.Is(err, sale.ErrNotAdmitted) {
		return err
	}
	var detail string
	switch msg := why.Error(); {
	case errors.Is(why, auth.ErrInvalidPass) && len(msg) > len(auth.ErrInvalidPass.Error())+2:
		detail = msg[len(auth.ErrInvalidPass.Error())+2:]
	default:
		detail = "the pass is not valid"
	}
	return &sale.DetailError{Err: sale.ErrNotAdmitted, Detail: detail}
}

type joinRequest struct {
	Altcha *string `json:"altcha"`
}

// joinLine gives the caller a place in the sale's line: 201 on the first join, 200
// with the same ticket after.
func (sr *saleRoutes) joinLine(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	var req joinRequest
	if err := sr.mw.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	code, err := presentedCode(c)
	if err != nil {
		respondError(c, err)
		return
	}
	solution := ""
	if req.Altcha != nil {
		solution = *req.Altcha
	}
	t, created, err := sr.rooms.Join(c.Request.Context(), id, caller(c).Buyer, solution, code)
	if err != nil {
		err = sr.lineError(c.Request.Context(), id, err)
		respondError(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, t)
}

// ticket answers the caller's ticket in the sale's line.
func (sr *saleRoutes) ticket(c *gin.Context) {
	byActivity(func(ctx context.Context, id int64) (waitingroom.Ticket, error) {
		t, err := sr.rooms.Ticket(ctx, id, caller(c).Buyer)
		return t, sr.lineError(ctx, id, err)
	})(c)
}

// lineError answers a line's sale that Redis does not know as a purchase would: 404
// when MySQL does not know it either, else 503 while it is rebuilt from MySQL.
func (sr *saleRoutes) lineError(ctx context.Context, id int64, err error) error {
	if errors.Is(err, waitingroom.ErrNoSale) {
		return sr.svc.MissingSale(ctx, id)
	}
	return err
}
