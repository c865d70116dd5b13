# make run    the service (API + worker) with Redis and MariaDB, set up from nothing
# make test   the whole test suite against real Redis and MariaDB
SHELL := /bin/bash

.PHONY: run test services stop build vet

services:
	scripts/services.sh up

build:
	go build -o bin/api ./cmd/api
	go build -o bin/worker ./cmd/worker

run: services build
	scripts/run.sh

vet:
	go vet ./...

test: services vet
	go test -race -count=1 -timeout 60m ./...

# Stops the Redis and MariaDB that `make run` or `make test` started (not others).
stop:
	scripts/services.sh down
