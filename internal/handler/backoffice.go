package handler

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/gin-gonic/gin"

	"seckill/internal/auth"
	"seckill/internal/presence"
	"seckill/internal/sale"
)

// InstanceLister lists the processes alive now, by their heartbeats.
type InstanceLister interface {
	List(ctx context.Context) ([]presence.Instance, error)
}

var _ InstanceLister = (*presence.Registry)(nil)

// backOffice answers the routes of the shop's back end and the admins beside the
// sales: access codes (codes.go), webhooks (webhooks.go), a sale's funnel (funnel.go)
// and the live processes.
type backOffice struct {
	mw      *middleware
	live    InstanceLister
	hooks   Webhooks
	funnels Funnel
	codes   AccessCodes
	cursors *auth.Cursors // of a sale's pages of codes
}

// instances lists the live processes: APIs first, then workers, the oldest first.
func (b *backOffice) instances(c *gin.Context) {
	out := []presence.Instance{}
	if b.live != nil {
		list, err := b.live.List(c.Request.Context())
		if err != nil {
			respondError(c, fmt.Errorf("%w: %w", sale.ErrUnavailable, err))
			return
		}
		out = append(out, list...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].StartedAt.Before(out[j].StartedAt.Time)
	})
	c.JSON(http.StatusOK, gin.H{"instances": out})
}

// haveCodes answers the routes of access codes 404 where the handler has none.
func (b *backOffice) haveCodes(c *gin.Context) {
	if b.codes == nil {
		respondError(c, errNoRoute)
		return
	}
	c.Next()
}
