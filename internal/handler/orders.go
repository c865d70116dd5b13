package handler

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/internal/sale"
)

type buyRequest struct {
	Quantity *int `json:"quantity"`
}

func validIdempotencyKey(k string) bool {
	if len(k) < 1 || len(k) > 64 {
		return false
	}
	for _, r := range k {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
		if !ok {
			return false
		}
	}
	return true
}

func (h *Handler) buy(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	key, hasKey := c.Request.Header["Idempotency-Key"]
	if hasKey && (len(key) != 1 || !validIdempotencyKey(key[0])) {
		respondError(c, errInvalidIdemKey)
		return
	}
	var req buyRequest
	if err := decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	if req.Quantity == nil {
		respondError(c, required("quantity"))
		return
	}
	r := sale.BuyRequest{ActivityID: id, UserID: caller(c).UserID, Quantity: *req.Quantity}
	if hasKey {
		r.IdempotencyKey = key[0]
	}
	o, replayed, err := h.svc.Buy(c.Request.Context(), r)
	if err != nil {
		respondError(c, err)
		return
	}
	if replayed {
		c.JSON(http.StatusOK, o)
		return
	}
	c.JSON(http.StatusAccepted, o)
}

func (h *Handler) listOrders(c *gin.Context) {
	os, err := h.svc.ListOrders(c.Request.Context(), caller(c).UserID)
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"orders": os})
}

// byOrder answers 200 with the order act returns for the order id in the path.
func byOrder(act func(context.Context, string, sale.Caller) (sale.Order, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		o, err := act(c.Request.Context(), c.Param("id"), caller(c))
		if err != nil {
			respondError(c, err)
			return
		}
		c.JSON(http.StatusOK, o)
	}
}
