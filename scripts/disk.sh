#!/usr/bin/env bash
# make test's first step: fails at once, saying why, when the disk under Go's build cache
# or under the temporary folder has less than 2 GB free. The suite's builds (about 3.5 GB
# of build cache from cold) and its private MariaDB servers need that much, and a full
# disk otherwise shows up as scattered failures far from their cause (InnoDB's error 28,
# "The table is full", the linker's "no space left on device").
set -euo pipefail
need_mb=2048
for dir in "$(go env GOCACHE)" "${TMPDIR:-/tmp}"; do
	mkdir -p "$dir"
	free_mb=$(df -Pm "$dir" | awk 'NR == 2 { print $4 }')
	if [ "$free_mb" -lt "$need_mb" ]; then
		echo "disk.sh: $free_mb MB free under $dir, less than the $need_mb MB make test needs;" \
			"free some space (go clean -cache empties Go's build cache)" >&2
		exit 1
	fi
done
