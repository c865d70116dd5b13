# make run    the service (API + worker) with Redis and MariaDB, set up from nothing
# make test   the whole test suite against real Redis and MariaDB
# make run-cluster   the same scaled out: a 3+3 Redis Cluster, three APIs behind nginx,
#                    two workers (scripts/cluster.sh; docs/topologies.md)
SHELL := /bin/bash

.PHONY: run run-cluster test services stop build vet tidy helm jaeger disk

services:
	scripts/services.sh up

# The commit goes into the binaries, for GET /api/v1/admin/instances.
LDFLAGS := -X seckill/internal/presence.commit=$(shell git describe --always --dirty 2>/dev/null)

build:
	go build -ldflags "$(LDFLAGS)" -o bin/api ./cmd/api
	go build -ldflags "$(LDFLAGS)" -o bin/worker ./cmd/worker

run: services build
	scripts/run.sh

run-cluster: services build
	scripts/cluster.sh up

vet:
	go vet ./...

# The service's and the chart checks' go.mod as `go mod tidy` leaves them, checked first:
# the chart's checks build against this module, so a dependency added here changes theirs.
# (tools/jaeger's go.sum holds what building Jaeger needs, not its dependencies' tests.)
tidy:
	go mod tidy -diff
	cd deploy/helm/chartcheck && go mod tidy -diff

# scripts/disk.sh first: a full disk fails here with its reason, not as scattered failures.
test: disk tidy services vet helm jaeger
	go test -race -count=1 -timeout 60m ./...
	cd deploy/helm/chartcheck && go vet ./... && go test -count=1 ./...

disk:
	scripts/disk.sh

# helm, for the chart's checks (deploy/helm/chartcheck); go install builds it from source.
HELM_VERSION := v3.22.0
helm:
	@command -v helm >/dev/null || [ -x "$$(go env GOPATH)/bin/helm" ] || go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

# Jaeger, the OTLP collector of the trace tests and of `JAEGER=1 make run`: the version
# tools/jaeger pins, built once into .data/jaeger/ (scripts/jaeger.sh).
jaeger:
	scripts/jaeger.sh >/dev/null

# Stops what `make run`, `make run-cluster` or `make test` started (by pid file, not others).
stop:
	scripts/cluster.sh down
	scripts/services.sh down

# Load tests (loadtest/README.md), against an API, a worker and a Redis of their own on
# free ports and a fresh seckill_loadtest database; figures go to docs/performance.md.
#   make loadtest   audit a crowd's orders in MySQL (a plain sale, then a sale of 10 variants),
#                   the waitlist's offers of returned units, then measure the ratios to
#                   /healthz (~1 min)
#   make loadtest-overload   an open-loop crowd (vegeta) at 3x what one API serves: 202/s
#                   vs that capacity, p99 of all answers, connection errors, API RSS; once
#                   against the API, once through nginx in front of it (~2 min)
#   make soak       5 minutes of 1,500 purchases/s on a sale nobody pays (60 s pay window):
#                   Redis', the API's and the worker's memory every 30 s (SOAK_FLAGS)
#   make k6         the k6 flash-sale script; installs k6 with go install when missing
#   make loadtest-cluster   the ratios on a private 3+3 Redis Cluster, with
#                           SECKILL_REDIS_MIN_REPLICAS=0 and then 1, back to back (~2.5 min)
#   make loadtest-hot       one hot sale on a private 3+3 Redis Cluster with stock_buckets 1
#                           and 3 in turns: purchases/s, p99, each master's share (~1 min)
#   make perf-report   the runs of docs/performance.md: make loadtest's with each run's record
#                   (-series) in docs/perf/, the comparison with another service when
#                   LOADTEST_OTHER_URL names its purchase endpoint (loadtest/README.md), then
#                   the plots (~2 min)
#   make perf-plots the plots of docs/performance.md (docs/img/perf-*.svg) from the records in docs/perf/
#   make profile    the ratios' purchase phase on one API, recording the API's and the worker's
#                   CPU profiles of it into .data/profile/ (go tool pprof -top .data/profile/api1.pprof)
.PHONY: loadtest loadtest-traces loadtest-overload soak k6 loadtest-cluster loadtest-hot perf-report perf-plots profile

loadtest: services build
	loadtest/run.sh audit variants waitlist ratios

loadtest-overload: services build
	LOADTEST_LIMITS=off loadtest/run.sh overload
	LOADTEST_LIMITS=off LOADTEST_FRONT=nginx loadtest/run.sh overload

soak: services build
	LOADTEST_LIMITS=off loadtest/run.sh soak

k6: services build
	@command -v k6 >/dev/null || [ -x "$$(go env GOPATH)/bin/k6" ] || go install go.k6.io/k6@latest
	loadtest/run.sh k6

loadtest-hot: services build
	LOADTEST_REDIS=cluster LOADTEST_LIMITS=off API_INSTANCES=$${API_INSTANCES:-2} loadtest/run.sh hot

loadtest-cluster: services build
	LOADTEST_REDIS=cluster LOADTEST_MIN_REPLICAS=0 loadtest/run.sh ratios
	LOADTEST_REDIS=cluster LOADTEST_MIN_REPLICAS=1 loadtest/run.sh ratios

perf-report: services build
	RATIOS_FLAGS="-series docs/perf/ratios.json -label $$(git describe --always --dirty) $$RATIOS_FLAGS" loadtest/run.sh audit ratios
	if [ -n "$$LOADTEST_OTHER_URL" ]; then \
		LOADTEST_LIMITS=off COMPARE_FLAGS="-series docs/perf/compare.json -label $$(git describe --always --dirty) $$COMPARE_FLAGS" \
			loadtest/run.sh compare; fi
	$(MAKE) perf-plots

# Tracing's cost: ratios with 1 % of the purchases traced to a private Jaeger.
loadtest-traces: services build jaeger
	LOADTEST_TRACES=$${LOADTEST_TRACES:-0.01} loadtest/run.sh ratios

profile: services build
	LOADTEST_LIMITS=off LOADTEST_PROFILE=$${LOADTEST_PROFILE:-.data/profile} \
		RATIOS_FLAGS="-group-size 0 $$RATIOS_FLAGS" loadtest/run.sh ratios

perf-plots:
	go run ./loadtest/crowd plot -out docs/img docs/perf/*.json
