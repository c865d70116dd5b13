package health

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Operations returns the routes of a process's operations port, which is never the
// buyers' (SECKILL_METRICS_ADDR, SECKILL_WORKER_METRICS_ADDR): GET /metrics from reg
// and, only when profiling is on (SECKILL_PPROF), net/http/pprof under /debug/pprof/.
// Anything else is 404.
func Operations(reg prometheus.Gatherer, profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index) // and the profiles it lists, by name
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
