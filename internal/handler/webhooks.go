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

func (b *backOffice) createWebhook(c *gin.Context) {
	var req createWebhookRequest
	if err := b.mw.decode(c, &req); err != nil {
		respondError(c, err)
		return
	}
	if req.URL == nil {
		respondError(c, required("url"))
		return
	}
	if b.hooks == nil {
		respondError(c, errNoWebhooks)
		return
	}
	w, err := b.hooks.Create(c.Request.Context(), *req.URL, req.Events)
	if err != nil {
		respondError(c, err)
		return
	}
	c.JSON(http.StatusCreated, w)
}

func (b *backOffice) listWebhooks(c *gin.Context) {
	out := []outbox.Webhook{}
	if b.hooks != nil {
		list, err := b.hooks.List(c.Request.Context())
		if err != nil {
			respondError(c, err)
			return
		}
		out = append(out, list...)
	}
	c.JSON(http.StatusOK, gin.H{"webhooks": out})
}

func (b *backOffice) deleteWebhook(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok || b.hooks == nil {
		respondError(c, outbox.ErrNotFound)
		return
	}
	if err := b.hooks.Delete(c.Request.Context(), id); err != nil {
		respondError(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (b *backOffice) webhookDeliveries(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok || b.hooks == nil {
		respondError(c, outbox.ErrNotFound)
		return
	}
	list, err := b.hooks.Deliveries(c.Request.Context(), id, listedDeliveries)
	if err != nil {
		respondError(c, err)
		return
	}
	out := append([]outbox.Delivery{}, list...)
	c.JSON(http.StatusOK, gin.H{"deliveries": out})
}
