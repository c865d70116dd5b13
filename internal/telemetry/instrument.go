package telemetry

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"gorm.io/gorm"
	"gorm.io/plugin/opentelemetry/tracing"
)

// Gin is the API's server span of each request (otelgin), named by its route, under
// the caller's traceparent when one came; nil when tracing is off (no middleware at
// all). The probes are left out.
func (t *Tracing) Gin() gin.HandlerFunc {
	if t == nil {
		return nil
	}
	return otelgin.Middleware(t.service, otelgin.WithTracerProvider(t.tp), otelgin.WithPropagators(Propagator),
		otelgin.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/healthz" && r.URL.Path != "/readyz" }))
}

// Instrument adds the spans of Redis commands (Redis) and MySQL statements (GORM) to
// the process's clients; nothing when tracing is off.
func (t *Tracing) Instrument(rdb redis.UniversalClient, db *gorm.DB) error {
	return errors.Join(t.Redis(rdb), t.GORM(db))
}

// Redis adds a span of each command sent on a caller's context to rdb (redisotel); a
// command without a span around it (the auto-pipeliner's batches, the periodic jobs)
// makes none (Sampler). Nothing when tracing is off.
func (t *Tracing) Redis(rdb redis.UniversalClient) error {
	if t == nil {
		return nil
	}
	if err := redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(t.tp), redisotel.WithDBStatement(false)); err != nil {
		return fmt.Errorf("trace redis: %w", err)
	}
	return nil
}

// GORM adds a span of each statement to db (GORM's OpenTelemetry plugin), without the
// statement's values (a buyer's subject is not for a trace back end). Nothing when
// tracing is off.
func (t *Tracing) GORM(db *gorm.DB) error {
	if t == nil {
		return nil
	}
	if err := db.Use(tracing.NewPlugin(tracing.WithTracerProvider(t.tp), tracing.WithoutMetrics(),
		tracing.WithoutQueryVariables())); err != nil {
		return fmt.Errorf("trace mysql: %w", err)
	}
	return nil
}
