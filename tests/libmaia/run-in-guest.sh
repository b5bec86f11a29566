#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the libmaia tests and run them in a guest with one maia device;
# prints TAP and exits non-zero if any failed (124 timeout, 125 guest died).
#
#   tests/libmaia/run-in-guest.sh [--no-build]
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$TOP/build/libmaia-tests
build=()
case "${1:-}" in
--no-build) build=(--no-build) ;;
"") ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac
if [ ${#build[@]} -eq 0 ]; then
	make -C "$TOP" --no-print-directory userspace >&2
fi
make -C "$TOP/tests/libmaia" --no-print-directory OUTPUT="$OUT" \
	USERSPACE_BUILD="$TOP/build/userspace" >&2

exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --fail-on-taint --loglevel 1 \
	--timeout 900 --file "$OUT:/root/libmaia-tests" -- /root/libmaia-tests/run-tests.sh
