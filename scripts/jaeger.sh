#!/usr/bin/env bash
# Prints the path of the Jaeger binary that tools/jaeger pins, building it first if this
# machine has none (.data/jaeger/jaeger-<version>; the first build takes minutes, later
# calls return at once). Tests (internal/testutil.StartJaeger), `make jaeger` and
# `JAEGER=1 make run` call it. The build goes to another name first, so one cut short
# leaves nothing that looks done.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2 }' tools/jaeger/go.mod)
[ -n "$version" ] || { echo "jaeger.sh: tools/jaeger/go.mod pins no github.com/jaegertracing/jaeger" >&2; exit 1; }
bin="$PWD/.data/jaeger/jaeger-$version"
if [ ! -x "$bin" ]; then
	mkdir -p .data/jaeger
	echo "jaeger.sh: building Jaeger $version once into .data/jaeger/ (a few minutes)" >&2
	(cd tools/jaeger && go build -o "$bin.$$.tmp" github.com/jaegertracing/jaeger/cmd/jaeger)
	mv "$bin.$$.tmp" "$bin"
fi
echo "$bin"
