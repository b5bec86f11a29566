#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The chip models and the device time model through the driver
# (Documentation/hw/time-model.rst), in guests:
#  - a Maia 200 (216 GiB of HBM, 32 x 4 tiles by its model) boots,
#    maia-smi shows its HBM, and the GEMM demo passes against the CPU;
#  - on a Maia 100, the same GEMM job five times, twice, the second time
#    with two busy loops on the host: the modeled time of the job is the
#    same on every run (maia-model-bench --repeat: "value": 0) and the same
#    loaded as idle;
#  - a sustained BF16 GEMM load steps the clock down at the 500 W TDP and
#    not under a 700 W cap (maia-model-bench --throttle).
# TAP, one line per check; exit status nonzero on any failure.
#
#   tests/model/run-in-guest.sh [--no-build]
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
[ "${1:-}" = --no-build ] && build=(--no-build)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=0 failed=0
echo "TAP version 13"

# tap PASSED NAME: one TAP line; PASSED is 0 for ok.
tap() {
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=1
	fi
}

guest() {
	"$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --timeout 600 "$@"
}

# show FILE: a failed boot's output as TAP comments (its last 60 lines), so
# that the log says why; the output directory goes at exit.
show() {
	tail -n 60 "$1" | sed 's/^/# /'
}

# A Maia 200 with its whole (sparse) HBM.
guest --device-opts model=maia200,hbm-size=216G -- sh -c \
	'maia-smi | grep -E "HBM|topology"; maia-gemm 256 256 512' >"$out/m200" 2>&1
st=$?
build=(--no-build)
tap $st "maia200 guest boots (status $st)"
[ "$st" -eq 0 ] || show "$out/m200"
grep -q '221184.0 MiB' "$out/m200"
tap $? "maia200 has 216 GiB of HBM: $(grep -m1 HBM "$out/m200" | tr -s ' ')"
grep -q '32 clusters x 4 tiles' "$out/m200"
tap $? "maia200 has 32 x 4 tiles"
grep -q 'maia-gemm: .*-> PASS' "$out/m200"
tap $? "maia200 runs the GEMM demo: $(grep -m1 -o 'max |err| [^ ]*' "$out/m200")"

# The same job, idle and with the host loaded.
guest --device-opts hbm-size=1G -- maia-model-bench --repeat 5 >"$out/idle" 2>&1 || show "$out/idle"
idle=$(sed -n 's/.*"modeled_repeatability", "value": \([0-9]*\).*"modeled_ns": \([0-9]*\).*/\1 \2/p' "$out/idle")
busy=()
for _ in 1 2; do timeout 600 sh -c 'while :; do :; done' & busy+=($!); done
guest --device-opts hbm-size=1G -- maia-model-bench --repeat 5 >"$out/loaded" 2>&1 || show "$out/loaded"
kill "${busy[@]}" 2>/dev/null
wait "${busy[@]}" 2>/dev/null
loaded=$(sed -n 's/.*"modeled_repeatability", "value": \([0-9]*\).*"modeled_ns": \([0-9]*\).*/\1 \2/p' "$out/loaded")
[ -n "$idle" ] && [ "${idle%% *}" = 0 ]
tap $? "the same GEMM job 5 times, idle host: the same modeled time (spread, ns: ${idle:-none})"
[ -n "$loaded" ] && [ "$loaded" = "$idle" ]
tap $? "5 times more with the host loaded: the same modeled time as idle (${loaded:-none})"

# Throttling in modeled time. Each job is a BF16 4096^3 GEMM (137 GFLOP the
# host computes): the driver's hang check counts host time (job_timeout_ms,
# 5 s by default), so this boot gives it 120 s, which only a real hang exceeds
# on a loaded 2-core host; the test is about modeled time.
guest --device-opts hbm-size=1G -- sh -c \
	'echo 120000 >/sys/module/maia/parameters/job_timeout_ms &&
	 maia-model-bench --throttle 4; echo ===; maia-model-bench --throttle 4 --cap 700' \
	>"$out/throttle" 2>&1
st=$?
tap $st "the throttle runs complete (status $st)"
[ "$st" -eq 0 ] || show "$out/throttle"
at500=$(sed -n '/===/q; s/.*job 4: .*clock step-downs \([0-9]*\).*/\1/p' "$out/throttle")
at700=$(sed -n '/===/,$ s/.*job 4: .*clock step-downs \([0-9]*\).*/\1/p' "$out/throttle")
[ -n "$at500" ] && [ "$at500" -ge 1 ]
tap $? "four BF16 4096^3 GEMMs at the 500 W TDP step the clock down (${at500:-none})"
[ -n "$at700" ] && [ "$at700" = 0 ]
tap $? "the same under a 700 W cap do not (${at700:-none})"
grep -E 'job|model' "$out/throttle" | sed 's/^/# /'

echo "1..$n"
exit $failed
