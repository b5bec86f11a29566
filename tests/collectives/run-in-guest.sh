#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Collectives between devices of one guest, against the CPU. One boot of 9
# devices cabled as three separate rings (qemu/run-guest --fabric
# rings:2,3,4: devices 0-1, 2-4 and 5-8); first, once every port is up,
# every port's link_downs must be 0 (the driver's probes take no link down:
# Documentation/hw/fabric.rst, "What the link counters mean"); then on the three rings at once
# (maia-coll-perf --first-dev F --ndev N), maia-coll-perf runs every collective in FP32 and
# BF16, every reduction, over sizes from 0 bytes through odd element counts
# to 1 MiB per rank in system memory (the devices reach it by DMA; the other
# runs use HBM), then a 64 MiB FP32 all-reduce, then every collective waited
# for through maia_comm_fence() (user-queue jobs first, kernel fences after),
# then two processes at once, each with its own communicator over the same
# devices (their collectives share the ring's links and must each take only
# their own chunks); every element is compared with the CPU's result. On the
# 2-device ring, when all rings are done, the driver's hang check goes to 0.5 s and its bound
# on one fabric wait to 2 s (both read at each check), and a group job of
# four all-reduces waits 1 s for a late peer before each; both go back to
# what they were.
# TAP: one line per ring size and run ("#wrong" must be 0 and every
# collective must succeed); a ring's lines fail on its own failures, or on
# the boot's (guest status). Exit status nonzero on any failure.
#
#   tests/collectives/run-in-guest.sh [--no-build]
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
[ "${1:-}" = --no-build ] && build=(--no-build)

# Bytes per rank: empty, one element, odd counts, across the 64 KiB message size.
SIZES=0,4,12,4100,65540,262148,1048580
# The rings, in the order they run: "first device:size" each.
RINGS="0:2 2:3 5:4"
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
# check at 0.5 s and its bound on one fabric wait at 4 s, rank 0 submits
# six all-reduces as one group job, and rank 1 makes each 1 s after the
# last, on a user queue and on the kernel path (two processes at once, each
# its own communicator, as in the concurrent run): each wait outlasts the hang
# check, all six (6 s) the bound on one wait plus the hang check and its
# period (MAIA_Q_FABRIC_WAITS tells the driver each is a new wait). The bound
# is 4 s, not 2, so that a guest starved by a loaded host (a 1 s sleep that
# wakes late) still stays within it. It must succeed with no queue stopped and no
# device reset. The dmesg check covers the boot and the rings run so far
# (this one first).
LATE="
	p=/sys/module/maia/parameters/job_timeout_ms
	f=/sys/module/maia/parameters/fabric_wait_max_ms
	was=\$(cat \$p) fwas=\$(cat \$f)
	echo 500 >\$p
	echo 4000 >\$f
	[ \"\$(cat \$p)\" = 500 ] && [ \"\$(cat \$f)\" = 4000 ] || echo 'RESULT ring2 param failed'
	maia-coll-perf --first-dev 0 --ndev 2 --op all_reduce --dtype fp32 --sizes 4096 \
		--iters 6 --warmup 0 --stagger-ms 1000 >/tmp/late-u.log 2>&1 & u=\$!
	MAIA_USERQ=0 maia-coll-perf --first-dev 0 --ndev 2 --op all_reduce --dtype fp32 \
		--sizes 4096 --iters 6 --warmup 0 --stagger-ms 1000 >/tmp/late-k.log 2>&1 & k=\$!
	wait \$u || echo 'RESULT ring2 userq failed'
	wait \$k || echo 'RESULT ring2 kernel failed'
	cat /tmp/late-u.log /tmp/late-k.log
	dmesg | grep -E 'without progress|resetting' && echo 'RESULT ring2 hang verdict'
	echo \"\$was\" >\$p
	echo \"\$fwas\" >\$f
	[ \"\$(cat \$p)\" = \"\$was\" ] && [ \"\$(cat \$f)\" = \"\$fwas\" ] ||
		echo 'RESULT ring2 param failed'"

# One id given to two processes on the ring of 2: both make rank 0 on device
# 0 and start an all-reduce; whichever comes second is refused at once
# (the device's FABRIC_COMM_BUSY) with libmaia's "in use" message, and only
# then does rank 1 (device 1) come, with which the other completes. Then
# two more processes make the same id's ranks 0 and 1 again, one after the
# other is allowed (sequence numbers start again at 0): they complete. One of
# the two goes through a user queue (the device's status in its completion),
# the other through the kernel path (the driver's DRM_MAIA_DEVICE_*).
BUSY="
		id=\$(maia-comm-id)
		one=\"--nranks 2 --id \$id --op all_reduce --dtype fp32 --sizes 4100 --iters 1 --warmup 0\"
		MAIA_COMM_TIMEOUT_MS=20000 maia-coll-perf --rank 0 --first-dev 0 \$one >/tmp/busy-a.log 2>&1 & a=\$!
		MAIA_USERQ=0 MAIA_COMM_TIMEOUT_MS=20000 maia-coll-perf --rank 0 --first-dev 0 \$one >/tmp/busy-b.log 2>&1 & b=\$!
		while kill -0 \$a 2>/dev/null && kill -0 \$b 2>/dev/null; do sleep 0.1; done
		maia-coll-perf --rank 1 --first-dev 1 \$one >/tmp/busy-c.log 2>&1 & c=\$!
		wait \$a; ra=\$?
		wait \$b; rb=\$?
		wait \$c; rc=\$?
		cat /tmp/busy-a.log /tmp/busy-b.log /tmp/busy-c.log
		refused=\$(cat /tmp/busy-a.log /tmp/busy-b.log | grep -c 'is in use on this device')
		echo \"# one id, two processes: rank 0 exits \$ra and \$rb, rank 1 \$rc, \$refused refused\"
		[ \$((ra + rb)) -gt 0 ] && [ \$ra -eq 0 -o \$rb -eq 0 ] && [ \$rc -eq 0 ] &&
			[ \"\$refused\" = 1 ] || echo 'RESULT ring2 busy failed'
		maia-coll-perf --rank 0 --first-dev 0 \$one >/tmp/busy-d.log 2>&1 & d=\$!
		maia-coll-perf --rank 1 --first-dev 1 \$one >/tmp/busy-e.log 2>&1 & e=\$!
		wait \$d; rd=\$?
		wait \$e; re=\$?
		cat /tmp/busy-d.log /tmp/busy-e.log
		echo \"# the same id again, one after the other: rank 0 exits \$rd, rank 1 \$re\"
		[ \$rd -eq 0 ] && [ \$re -eq 0 ] || echo 'RESULT ring2 busy failed'"

# One ring's work, as guest shell: ring_work FIRST SIZE. The rings run at
# once (each on its own devices; most of their time is small collectives
# waiting on the fabric, which the rings overlap), each into its own log.
ring_work() {
	local coll="maia-coll-perf --first-dev $1 --ndev $2" r=ring$2 busy=
	[ "$2" = 2 ] && busy=$BUSY
	echo "
	(
		echo '# ring of $2 devices: devices $1..$(($1 + $2 - 1))'
		$coll --op all --dtype all --redop all --sizes $SIZES \
			--iters 1 --warmup 0 --mem host || echo 'RESULT $r sizes failed'
		$coll --op all_reduce --dtype fp32 --sizes 64M \
			--iters 1 --warmup 0 || echo 'RESULT $r 64M failed'
		$coll --op all --dtype fp32 --sizes 12,65540 \
			--iters 2 --warmup 0 --fence || echo 'RESULT $r fence failed'
		$coll --op all_reduce --dtype all --sizes 4100,1048580 \
			--iters 10 --warmup 0 >/tmp/comm-a-$r.log 2>&1 & a=\$!
		$coll --op all_gather --dtype fp32 --sizes 4100,1048580 \
			--iters 10 --warmup 0 >/tmp/comm-b-$r.log 2>&1 & b=\$!
		wait \$a || echo 'RESULT $r concurrent failed'
		wait \$b || echo 'RESULT $r concurrent failed'
		cat /tmp/comm-a-$r.log /tmp/comm-b-$r.log
		$busy
		echo 'RESULT $r done'
	) >/tmp/$r.log 2>&1 &"
}

# A clean boot: every port comes up (bound 60 s, for a loaded host) and
# none went down on the way.
PORTS=/sys/bus/pci/drivers/maia/*/fabric/port*
BOOT="
	i=0
	while [ \$i -lt 600 ] && grep -qx down $PORTS/state; do sleep 0.1; i=\$((i + 1)); done
	grep -H . $PORTS/link_downs | sed 's|^/sys/bus/pci/drivers/maia/||'
	if grep -qx down $PORTS/state || grep -qvx 0 $PORTS/link_downs; then
		echo 'RESULT boot link_downs failed'
	fi
	echo 'RESULT boot done'"

script=$BOOT
devices=0 sizes="" logs=""
for ring in $RINGS; do
	script="$script$(ring_work "${ring%:*}" "${ring#*:}")"
	devices=$((devices + ${ring#*:}))
	sizes="$sizes${sizes:+,}${ring#*:}"
	logs="$logs /tmp/ring${ring#*:}.log"
done
# Then, the rings done, the late peer on the ring of 2 (it changes the
# driver's hang check for every device).
script="$script
	wait
	cat$logs
	$LATE
	echo 'RESULT ring2 late done'"
log=$(mktemp)
"$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --devices "$devices" --fabric "rings:$sizes" \
	--timeout 900 -- sh -c "$script" >"$log" 2>&1
rc=$?
sed 's/^/# /' "$log" | grep -v 'is not connected to host network'
grep -q "^RESULT boot done" "$log" && ! grep -q "^RESULT boot link_downs failed" "$log"
tap $? "a clean boot of $devices devices: every fabric port up, link_downs 0 on every one (guest status $rc)"
for ring in $RINGS; do
	first=${ring%:*} size=${ring#*:} r=ring${ring#*:}
	what="ring of $size devices (devices $first-$((first + size - 1)))"
	for run in sizes 64M fence concurrent; do
		[ $rc -eq 0 ] && grep -q "^RESULT $r done" "$log" && ! grep -q "^RESULT $r $run failed" "$log"
		tap $? "$what: $run (every collective checked against the CPU; guest status $rc)"
	done
	if [ "$size" = 2 ]; then
		[ $rc -eq 0 ] && grep -q "^RESULT $r done" "$log" && ! grep -q "^RESULT $r busy failed" "$log"
		tap $? "$what: one id given to two processes, both rank 0 on device 0: the second refused at once (communicator id in use), the first completes with rank 1; then the same id again, one after the other, completes (guest status $rc)"
		[ $rc -eq 0 ] && grep -q "^RESULT $r late done" "$log" &&
			! grep -qE "^RESULT $r (param|userq|kernel) failed|^RESULT $r hang" "$log"
		tap $? "$what: a group job of 6 all-reduces whose peer comes 1 s late to each, job_timeout_ms=500, fabric_wait_max_ms=4000: no hang verdict, user queue and kernel path (guest status $rc)"
	fi
done
rm -f "$log"
echo "1..$n"
exit $failed
