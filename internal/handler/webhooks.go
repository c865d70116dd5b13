package handler

import (
	"context"
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/internal/outbox"
)

// Webhooks is what the admin's webhook routes need from internal/outbox.
type Webhooks interface {
	Create(ctx context.Context, url string, events []string) (outbox.Webhook, error)
	List(ctx context.Context) ([]outbox.Webhook, error)
	Delete(ctx context.Context, id int64) error
	Deliveries(ctx context.Context, id int64, limit int) ([]outbox.Delivery, error)
}

var _ Webhooks = (*outbox.Webhooks)(nil)

// errNoWebhooks answers the webhook routes of an API built without them (tests).
var errNoWebhooks = errors.New("webhooks are not configured on this server")

// listedDeliveries is how many of an endpoint's deliveries its list shows, newest first.
const listedDeliveries = 100

type createWebhookRequest struct {
	URL    *string  `json:"url"`
	Events []string `json:"events"`
}

func (h *Handler) createWebhook(c *gin.Context) {
	var req createWebhookRequest
	if err := h.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	if req.URL == nil {
		respondError(c, required("url"))
		return
	}
	if h.hooks == nil {
		respondError(c, errNoWebhooks)
		return
	}
	w, err := h.hooks.Create(c.Request.Context(), *req.URL, req.Events)
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, w)
}

func (h *Handler) listWebhooks(c *gin.Context) {
	out := []outbox.Webhook{}
	if h.hooks != nil {
		list, err := h.hooks.List(c.Request.Context())
		if err != nil {
			respondError(c, err)
			return
		}
		out = append(out, list...)
	}
	c.JSON(http.StatusOK, gin.H{"webhooks": out})
}

func (h *Handler) deleteWebhook(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok || h.hooks == nil {
		respondError(c, outbox.ErrNotFound)
		return
	}
	if err := h.hooks.Delete(c.Request.Context(), id); err != nil {
		respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *Handler) webhookDeliveries(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok || h.hooks == nil {
		respondError(c, outbox.ErrNotFound)
		return
	}
	list, err := h.hooks.Deliveries(c.Request.Context(), id, listedDeliveries)
	if err != nil {
		respondError(c, err)
		return
	}
	out := append([]outbox.Delivery{}, list...)
	c.JSON(http.StatusOK, gin.H{"deliveries": out})
}
