#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the ioctl fuzzer and run it in one guest boot; prints TAP and exits
# non-zero on any failure (124 timeout, 125 guest died, 1 a check failed or
# the kernel tainted itself).
#
#   tests/ioctl-fuzz/run-in-guest.sh [--no-build] [--devices N] [--timeout SEC]
#                                    [-- FUZZER ARGS...]
#
# The devices (default 2) have their fabric ports cabled as a ring
# (qemu/run-guest --fabric ring), so the fuzzer's collective worker runs
# beside the others (fuzzer argument --no-coll: not).
# Default fuzzer arguments (the short pass of `make check`):
#   --seed $MAIA_FUZZ_SEED (default 1) --procs 4 --calls 100000 --seconds 25
#   --job-timeout-ms 1000
# Arguments after -- are appended and override them (the last one wins).
# MAIA_FUZZ_SEED=random picks a seed from the clock (printed in the output).
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$TOP/build/ioctl-fuzz
build=()
devices=2
timeout=300
while [ $# -gt 0 ]; do
	case "$1" in
	--no-build) build=(--no-build) ;;
	--devices) devices=$2; shift ;;
	--timeout) timeout=$2; shift ;;
	-h | --help) sed -n '3,17s/^# \{0,1\}//p' "$0"; exit 0 ;;
	--) shift; break ;;
	*) echo "run-in-guest.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

seed=${MAIA_FUZZ_SEED:-1}
[ "$seed" = random ] && seed=$(( ($(date +%s%N) / 1000) % 4294967296 ))

if [ ${#build[@]} -eq 0 ]; then
	make -C "$TOP" --no-print-directory driver userspace >&2
fi
make -C "$TOP/tests/ioctl-fuzz" --no-print-directory OUTPUT="$OUT" >&2

exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --devices "$devices" --fabric ring \
	--fail-on-taint --loglevel 1 --timeout "$timeout" \
	--file "$OUT:/root/ioctl-fuzz" -- /root/ioctl-fuzz/run-fuzz.sh \
	--seed "$seed" --procs 4 --calls 100000 --seconds 25 --job-timeout-ms 1000 "$@"
