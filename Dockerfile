# syntax=docker/dockerfile:1
#
# One image with both binaries of the service: cmd/api (which also carries the
# migrations and the web pages, embedded) and cmd/worker. Nothing else is needed at
# run time. docker-compose.yml runs it with Redis and MariaDB.
#
#   docker build -t seckill .
#   docker run --rm -e SECKILL_JWT_SECRET=... seckill api token -user 42   # a bearer token
#
# The command picks the binary: `api` (serve; applies migrations first), `api migrate`,
# `api token ...`, or `worker`. Configuration is the environment of
# internal/config/config.go; the image only makes both servers listen on all interfaces.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
WORKDIR /src
# Static binaries (no cgo) run on the distroless static base.
ENV CGO_ENABLED=0
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/api ./cmd/api && \
    go build -trimpath -ldflags="-s -w" -o /out/worker ./cmd/worker

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/api /out/worker /usr/local/bin/
ENV PATH=/usr/local/bin:/usr/bin:/bin \
    SECKILL_HTTP_ADDR=0.0.0.0:8080 \
    SECKILL_WORKER_METRICS_ADDR=0.0.0.0:9091
USER nonroot:nonroot
# 8080: the API (cmd/api). 9091: the worker's /metrics (cmd/worker).
EXPOSE 8080 9091
CMD ["api"]
