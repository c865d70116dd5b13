package handler

import (
	"context"
	"encoding/csv"
	"net/http"

	"github.com/gin-gonic/gin"

	"seckill/internal/funnel"
)

// Funnel answers a sale's funnel (internal/funnel).
type Funnel interface {
	Funnel(ctx context.Context, activityID int64) (funnel.Figures, error)
	// ArchivedLine is an archived sale's line as kept, for its public status.
	ArchivedLine(ctx context.Context, activityID int64) (funnel.ArchivedLine, error)
}

var _ Funnel = (*funnel.Funnel)(nil)

var errBadFunnelFormat = &invalidRequest{"format must be json or csv"}

// funnel answers GET /api/v1/admin/activities/{id}/funnel: JSON, or with ?format=csv a
// CSV of one row per figure (figure,value) for the shop's spreadsheet.
func (b *backOffice) funnel(c *gin.Context) {
	id, ok := pathID(c, "id")
	if !ok {
		respondError(c, errBadPathActivity)
		return
	}
	format := c.DefaultQuery("format", "json")
	if format != "json" && format != "csv" {
		respondError(c, errBadFunnelFormat)
		return
	}
	if b.funnels == nil {
		respondError(c, errNoRoute)
		return
	}
	f, err := b.funnels.Funnel(c.Request.Context(), id)
	if err != nil {
		respondError(c, err)
		return
	}
	if format == "json" {
		c.JSON(http.StatusOK, f)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="funnel-`+c.Param("id")+`.csv"`)
	c.Status(http.StatusOK)
	w := csv.NewWriter(c.Writer)
	_ = w.Write([]string{"figure", "value"})
	for _, r := range f.Rows() {
		_ = w.Write(r[:])
	}
	w.Flush()
}
