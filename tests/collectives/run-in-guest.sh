#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Collectives between devices of one guest, against the CPU: for rings of 2,
# 3 and 4 devices (qemu/run-guest --devices N --fabric ring, one boot each),
# maia-coll-perf runs every collective in FP32 and BF16, every reduction,
# over sizes from 0 bytes through odd element counts to 1 MiB per rank in
# system memory (the devices reach it by DMA; the other runs use HBM), then
# a 64 MiB FP32 all-reduce, then every collective waited for through
# maia_comm_fence() (user-queue jobs first, kernel fences after), then two
# processes at once, each with its own communicator over the same devices
# (their collectives share the ring's links and must each take only their
# own chunks); every element is compared with the CPU's result. Last, in
# the 2-device boot, the driver's hang check goes to 1 s (job_timeout_ms is
# read at each check) and a collective waits 2.5 s for a late peer.
# TAP: one line per ring size and run ("#wrong" must be 0 and every
# collective must succeed). Exit status nonzero on any failure.
#
#   tests/collectives/run-in-guest.sh [--no-build]
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
[ "${1:-}" = --no-build ] && build=(--no-build)

# Bytes per rank: empty, one element, odd counts, across the 64 KiB message size.
SIZES=0,4,12,4100,65540,262148,1048580
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
# A rank whose peers come late is waiting, not hung: with the driver's hang
# check at 1 s, rank 0's all-reduce waits 2.5 s alone for rank 1, on a user
# queue and on the kernel path; it must succeed with no queue stopped and
# no device reset (the device reports MAIA_Q_STATUS_FABRIC_WAIT).
LATE="
	echo 1000 >/sys/module/maia/parameters/job_timeout_ms
	[ \"\$(cat /sys/module/maia/parameters/job_timeout_ms)\" = 1000 ] || echo 'RESULT param failed'
	maia-coll-perf --op all_reduce --dtype fp32 --sizes 4096 --iters 1 --warmup 0 \
		--stagger-ms 2500 || echo 'RESULT userq failed'
	MAIA_USERQ=0 maia-coll-perf --op all_reduce --dtype fp32 --sizes 4096 --iters 1 \
		--warmup 0 --stagger-ms 2500 || echo 'RESULT kernel failed'
	dmesg | grep -E 'without progress|resetting' && echo 'RESULT hang verdict'"
for devices in 2 3 4; do
	log=$(mktemp)
	late=
	[ "$devices" = 2 ] && late=$LATE
	"$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --devices "$devices" --fabric ring \
		--timeout 900 -- sh -c "
			maia-coll-perf --op all --dtype all --redop all --sizes $SIZES \
				--iters 1 --warmup 0 --mem host || echo 'RESULT sizes failed'
			maia-coll-perf --op all_reduce --dtype fp32 --sizes 64M \
				--iters 1 --warmup 0 || echo 'RESULT 64M failed'
			maia-coll-perf --op all --dtype fp32 --sizes 12,65540 \
				--iters 2 --warmup 0 --fence || echo 'RESULT fence failed'
			maia-coll-perf --op all_reduce --dtype all --sizes 4100,1048580 \
				--iters 10 --warmup 0 >/tmp/comm-a.log 2>&1 & a=\$!
			maia-coll-perf --op all_gather --dtype fp32 --sizes 4100,1048580 \
				--iters 10 --warmup 0 >/tmp/comm-b.log 2>&1 & b=\$!
			wait \$a || echo 'RESULT concurrent failed'
			wait \$b || echo 'RESULT concurrent failed'
			cat /tmp/comm-a.log /tmp/comm-b.log
			$late
			echo RESULT done" >"$log" 2>&1
	rc=$?
	build=(--no-build)
	sed 's/^/# /' "$log" | grep -v 'is not connected to host network'
	for run in sizes 64M fence concurrent; do
		[ $rc -eq 0 ] && grep -q '^RESULT done' "$log" && ! grep -q "^RESULT $run failed" "$log"
		tap $? "$devices devices: $run (every collective checked against the CPU; guest status $rc)"
	done
	if [ -n "$late" ]; then
		[ $rc -eq 0 ] && grep -q '^RESULT done' "$log" &&
			! grep -qE '^RESULT (param|userq|kernel) failed|^RESULT hang' "$log"
		tap $? "a peer 2.5 s late with job_timeout_ms=1000: no hang verdict, user queue and kernel path (guest status $rc)"
	fi
	rm -f "$log"
done
echo "1..$n"
exit $failed
