package handler

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/internal/buyer"
	"seckill/internal/sale"
	"seckill/internal/waitingroom"
)

// Waitlists is what the waitlist's routes need from internal/sale.
type Waitlists interface {
	JoinWaitlist(ctx context.Context, activityID int64, who buyer.ID, quantity int, variant *string, ticket bool) (sale.WaitlistEntry, bool, error)
	Waitlist(ctx context.Context, activityID int64, who buyer.ID) (sale.WaitlistEntry, error)
	LeaveWaitlist(ctx context.Context, activityID int64, who buyer.ID) error
}

var _ Waitlists = (*sale.Waitlists)(nil)

// waitlistRoutes answer a buyer's place on a sold-out sale's waitlist; the sale's
// waiting room tells whether the buyer holds a ticket of its line.
type waitlistRoutes struct {
	svc   Waitlists
	mw    *middleware
	rooms Rooms
}

type waitlistRequest struct {
	Quantity *int    `json:"quantity"`
	Variant  *string `json:"variant"`
}

// joinWaitlist puts the caller on a sold-out sale's waitlist: 201 on the first join, 200
// with the same entry after.
func (wr *waitlistRoutes) joinWaitlist(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	var req waitlistRequest
	if err := wr.mw.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	if req.Quantity == nil {
		respondError(c, required("quantity"))
		return
	}
	// A sale with a waiting room takes on its waitlist only the buyers who hold a ticket
	// of its line; the waitlist's join knows whether the sale has one.
	_, err := wr.rooms.Ticket(c.Request.Context(), id, caller(c).Buyer)
	if err != nil && !errors.Is(err, waitingroom.ErrNoTicket) && !errors.Is(err, waitingroom.ErrNoSale) {
		respondError(c, err)
		return
	}
	e, created, err := wr.svc.JoinWaitlist(c.Request.Context(), id, caller(c).Buyer, *req.Quantity, req.Variant, err == nil)
	if err != nil {
		respondError(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, e)
}

// waitlistEntry answers the caller's entry on the sale's waitlist, 404 without one.
func (wr *waitlistRoutes) waitlistEntry(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	e, err := wr.svc.Waitlist(c.Request.Context(), id, caller(c).Buyer)
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, e)
}

// leaveWaitlist takes the caller off the sale's waitlist: 204, 404 without an entry.
func (wr *waitlistRoutes) leaveWaitlist(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	if err := wr.svc.LeaveWaitlist(c.Request.Context(), id, caller(c).Buyer); err != nil {
		respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
