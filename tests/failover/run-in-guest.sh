#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fabric failover (Documentation/hw/fabric.rst, "Failover"), two guests.
#
# A ring of two: both cables up, QMP set_link off takes cable 0's carrier
# away (device 0's port 0 to device 1's port 1); once both of its ends are
# DOWN:
#   - each end of cable 0 counted exactly one link DOWN (a dead peer) and
#     cable 1 none (clean boot, then one cut);
#   - all-reduces in FP32 and BF16, at 4100 bytes per rank (gather-reduce)
#     and 1 MiB (the ring), run over cable 1 both ways and match the CPU
#     (maia-coll-perf: 0 wrong elements), with no device reset.
# A ring of four, cable 0 cut the same way:
#   - every collective (all-reduce, all-gather, reduce-scatter, broadcast,
#     all-to-all) in FP32 and BF16 runs relayed round the ring the other
#     way by devices 3 and 2, 0 wrong; the cut's ends count failovers;
#   - cable 0 back (set_link on): both ends UP, the next all-reduce is right
#     and nothing more is relayed;
#   - cable 0 cut again while six 16 MiB all-reduces run back to back on
#     one set of communicators (the host cuts as the guest starts them):
#     every one ends OK, the last with 0 wrong, then one more in BF16 on
#     the backup route; no device reset; maia-smi topo shows the failovers;
#   - cable 2 cut as well (the ring in two pieces): the all-reduce fails at
#     once, its message naming the two ranks of the other piece;
#   - every port has sysfs spurious_rto (hardware 1.12), at most its
#     retransmits (an undone timeout resent a frame), and maia-smi topo
#     --json carries it for every port.
#
#   tests/failover/run-in-guest.sh [--no-build]
#
# Prints TAP. Exit status 0 if everything passed; 124 on timeout.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TIMEOUT=180		# each guest run
build=()
case "${1:-}" in
--no-build) build=(--no-build) ;;
"") ;;
-h | --help) sed -n '3,23s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/maia-failover.XXXXXX")
qmp=$tmp/qmp.sock
guest_pid=
# shellcheck disable=SC2317 # called by the trap
stop_guest() {
	# run-guest leads its own process group: QEMU goes with it.
	if [ -n "$guest_pid" ] && kill -0 "$guest_pid" 2>/dev/null; then
		kill -TERM -- "-$guest_pid" 2>/dev/null || true
		sleep 1
		kill -KILL -- "-$guest_pid" 2>/dev/null || true
	fi
	guest_pid=
}
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	stop_guest
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

n=0
failed=0
tap() { # tap ok|not-ok TEXT
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi
}

set_link() { # set_link NETDEV on|off: QMP, one TAP line
	local out
	if out=$("$TOP/tests/failover/qmp-set-link" "$qmp" "$1" "$2"); then
		tap ok "QMP set_link $1 $2: $out"
	else
		tap not-ok "QMP set_link $1 $2: $out"
	fi
}

# run_guest NDEV SCRIPT: boots a guest with NDEV ring-cabled devices running
# SCRIPT; every output line goes to on_line (defined per phase). Sets rc.
run_guest() {
	local left line
	rm -f "$tmp/out" "$qmp"
	mkfifo "$tmp/out"
	setsid "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --devices "$1" --fabric ring \
		--qmp "$qmp" --timeout "$TIMEOUT" -- sh -c "$2" >"$tmp/out" 2>&1 &
	guest_pid=$!
	exec 3<"$tmp/out"
	local deadline=$(($(date +%s) + TIMEOUT + 10))
	while :; do
		left=$((deadline - $(date +%s)))
		if [ $left -le 0 ]; then
			tap not-ok "the guest run did not end within $TIMEOUT s"
			exit 124
		fi
		line=
		IFS= read -r -t "$left" line <&3 || { [ -z "$line" ] && break; }
		case "$line" in
		*"is not connected to host network"*) ;;
		*) on_line "$line" ;;
		esac
	done
	exec 3<&-
	rc=0
	wait "$guest_pid" || rc=$?
	guest_pid=
}

# ---- a ring of two --------------------------------------------------------

# In the guest: both cables up, then the host cuts cable 0; every wait is
# bounded (60 s: a loaded host, not a timing claim).
# shellcheck disable=SC2016 # expanded by the guest's shell
GUEST2='
f0=/sys/class/accel/accel0/device/fabric f1=/sys/class/accel/accel1/device/fabric
i=0
while [ $i -lt 600 ] && grep -qx down $f0/port*/state $f1/port*/state; do sleep 0.1; i=$((i + 1)); done
# run-guest holds a line'"'"'s newline back until the next line: a second one.
echo FAILOVER-READY
echo "# waiting for the host to cut cable 0"
i=0
while [ $i -lt 600 ] && { grep -qx up $f0/port0/state || grep -qx up $f1/port1/state; }; do
	sleep 0.1; i=$((i + 1))
done
for p in $f0/port0 $f1/port1 $f0/port1 $f1/port0; do
	echo "PORT ${p#/sys/class/accel/} $(cat $p/state) link_downs $(cat $p/link_downs) dead_peer $(cat $p/dead_peer)"
done
maia-coll-perf --first-dev 0 --ndev 2 --op all_reduce --dtype all --sizes 4100,1048580 \
	--iters 2 --warmup 0
echo "RESETS $(cat /sys/class/accel/accel0/device/reset_count) $(cat /sys/class/accel/accel1/device/reset_count)"'

ready=0 done0=0 ports="" resets=""
on_line() {
	case "$1" in
	FAILOVER-READY)
		ready=1
		set_link fab0p0 off
		;;
	RESETS*) echo "# $1"; resets=${1#RESETS } ;;
	PORT*) echo "# $1"; ports="$ports${1#PORT }
" ;;
	*) echo "# $1" ;;
	esac
	case "$1" in "# done: 0 wrong elements") done0=$((done0 + 1)) ;; esac
}
run_guest 2 "$GUEST2"
[ $ready = 1 ] || tap not-ok "the guest never saw both cables up (FAILOVER-READY)"
want="accel0/device/fabric/port0 down link_downs 1 dead_peer 1
accel1/device/fabric/port1 down link_downs 1 dead_peer 1
accel0/device/fabric/port1 up link_downs 0 dead_peer 0
accel1/device/fabric/port0 up link_downs 0 dead_peer 0
"
if [ "$ports" = "$want" ]; then
	tap ok "ring of 2, cable 0 cut: both of its ends DOWN with exactly one link down (a dead peer) each; cable 1 up, no link down"
else
	tap not-ok "ring of 2, cable 0 cut: the ports' states and counters are not one down each on cable 0 and none on cable 1"
fi
if [ $rc -eq 0 ] && [ $done0 -ge 1 ] && [ "$resets" = "0 0" ]; then
	tap ok "all-reduce FP32 and BF16 at 4100 B (gather-reduce) and 1 MiB (ring) per rank over cable 1 both ways: 0 wrong elements, no device reset"
else
	tap not-ok "all-reduce over the remaining cable (guest status $rc, $done0 runs with 0 wrong, resets: $resets)"
fi

# ---- a ring of four -------------------------------------------------------

# The guest prints each phase's marker and waits for the host's set_link;
# FO lines: the failover counters of the cut's ends and the relays.
# shellcheck disable=SC2016 # expanded by the guest's shell
GUEST4='
f() { echo /sys/class/accel/accel$1/device/fabric/port$2; }
fo() {
	echo "FO $1 failovers $(cat $(f 0 0)/failovers) $(cat $(f 1 1)/failovers) relayed $(cat $(f 3 1)/relayed) $(cat $(f 2 1)/relayed) resent $(cat $(f 0 0)/resent)"
}
wait_state() { # wait_state up|down DEV PORT ...
	s=$1; shift
	while [ $# -ge 2 ]; do
		i=0
		while [ $i -lt 600 ] && ! grep -qx $s $(f $1 $2)/state; do sleep 0.1; i=$((i + 1)); done
		shift 2
	done
}
wait_state up 0 0 0 1 1 0 1 1 2 0 2 1 3 0 3 1
echo CUT-BEFORE
echo "# waiting for the host to cut cable 0"
wait_state down 0 0 1 1
maia-coll-perf --ndev 4 --op all --dtype all --sizes 4100,1048580 --iters 1 --warmup 0
fo cut
echo RESTORE
echo "# waiting for the host to plug cable 0 back"
wait_state up 0 0 1 1
maia-coll-perf --ndev 4 --op all_reduce --dtype fp32 --sizes 1048580 --iters 1 --warmup 0
fo restored
wait_state up 0 0 1 1
echo CUT-MID
echo "# all-reduces of 16 MiB per rank while the host cuts cable 0"
maia-coll-perf --ndev 4 --op all_reduce --dtype fp32 --sizes 16777216 --iters 6 --warmup 0
wait_state down 0 0 1 1
maia-coll-perf --ndev 4 --op all_reduce --dtype bf16 --sizes 16777216 --iters 1 --warmup 0
fo mid
maia-smi topo | grep -i "failovers" | sed "s/^/TOPO /"
for p in /sys/class/accel/accel*/device/fabric/port*; do
	echo "SRTO $(cat $p/spurious_rto) $(cat $p/retransmits)"
done
echo "SRTO-JSON $(maia-smi topo --json | grep -o spurious_rto | wc -l)"
echo CUT-TWO
echo "# waiting for the host to cut cable 2 as well"
wait_state down 2 0 3 1
maia-coll-perf --ndev 4 --op all_reduce --dtype fp32 --sizes 1048580 --iters 1 --warmup 0 \
	2>&1 | sed "s/^/TWO /"
echo "RESETS $(cat /sys/class/accel/accel*/device/reset_count | tr "\n" " ")"'

phase="" fo_cut="" fo_restored="" fo_mid="" resets="" wrong0=0 coll_fail=0 topo_lines=0 two_msg=
srto_ports=0 srto_bad=0 srto_sum=0 srto_json=0
declare -A done_in=()
on_line() {
	case "$1" in
	CUT-BEFORE) phase=cut; set_link fab0p0 off ;;
	RESTORE) phase=restored; set_link fab0p0 on ;;
	CUT-MID) phase=mid; set_link fab0p0 off ;;
	CUT-TWO) phase=two; set_link fab2p0 off ;;
	"TWO maia-coll-perf: "*"the ring is cut in two places, ranks "*) echo "# $1"; two_msg=$1 ;;
	"FO cut "*) echo "# $1"; fo_cut=${1#FO cut } ;;
	"FO restored "*) echo "# $1"; fo_restored=${1#FO restored } ;;
	"FO mid "*) echo "# $1"; fo_mid=${1#FO mid } ;;
	TOPO*) echo "# $1"; topo_lines=$((topo_lines + 1)) ;;
	"SRTO "*)
		echo "# $1"
		read -r _ s r <<<"$1"
		srto_ports=$((srto_ports + 1))
		if [ "$s" -le "$r" ] 2>/dev/null; then srto_sum=$((srto_sum + s)); else srto_bad=1; fi ;;
	"SRTO-JSON "*) echo "# $1"; srto_json=${1#SRTO-JSON } ;;
	RESETS*) echo "# $1"; resets=${1#RESETS } ;;
	*) echo "# $1" ;;
	esac
	case "$1" in
	"# done: 0 wrong elements") done_in[$phase]=$((${done_in[$phase]:-0} + 1)) ;;
	"# done: "*) wrong0=1 ;;
	"maia-coll-perf: "*) coll_fail=1 ;;
	esac
}
run_guest 4 "$GUEST4"
# FO fields: failovers A B relayed C D resent E
read -r _ fa fb _ ra rb _ re <<<"${fo_cut:-x x x x x x x x}"
if [ "${done_in[cut]:-0}" -eq 1 ] && [ $coll_fail = 0 ] && [ $wrong0 = 0 ] &&
	[ "$fa" -gt 0 ] 2>/dev/null && [ "$fa" = "$fb" ] && [ "$ra" -gt 0 ] && [ "$rb" -gt 0 ]; then
	tap ok "ring of 4, cable 0 cut: every collective in FP32 and BF16 relayed the other way round, 0 wrong; $fa failovers at each end, devices 3 and 2 relayed $ra and $rb chunks"
else
	tap not-ok "ring of 4, cable 0 cut: collectives (done ${done_in[cut]:-0}, failed $coll_fail, wrong $wrong0), counters: $fo_cut"
fi
read -r _ fa2 fb2 _ ra2 rb2 _ _ <<<"${fo_restored:-x x x x x x x x}"
if [ "${done_in[restored]:-0}" -eq 1 ] && [ "$fa2" = "$fa" ] && [ "$ra2" = "$ra" ] && [ "$rb2" = "$rb" ]; then
	tap ok "cable 0 plugged back: both ends UP, the all-reduce right, no failover and nothing relayed since"
else
	tap not-ok "cable 0 plugged back: done ${done_in[restored]:-0}, counters $fo_restored (after the cut: $fo_cut)"
fi
read -r _ fa3 _ _ ra3 _ _ re3 <<<"${fo_mid:-x x x x x x x x}"
if [ $rc -eq 0 ] && [ "${done_in[mid]:-0}" -eq 2 ] && [ $coll_fail = 0 ] && [ $wrong0 = 0 ] &&
	[ "$fa3" -gt "$fa2" ] 2>/dev/null && [ "$ra3" -gt "$ra2" ] &&
	[ "$resets" = "0 0 0 0 " ]; then
	tap ok "cable 0 cut during six 16 MiB all-reduces on one set of communicators: all OK, 0 wrong, then BF16 on the backup route; failovers $fa2 -> $fa3, chunks re-sent as the link went down: $re3; no device reset"
else
	tap not-ok "cable 0 cut during all-reduces: guest status $rc, done ${done_in[mid]:-0}/2, failed $coll_fail, wrong $wrong0, counters $fo_mid, resets $resets"
fi
case "$two_msg" in
*"ranks 1..2 (2, in ring order) are out of reach"* | *"ranks 3..0 (2, in ring order) are out of reach"*)
	tap ok "cables 0 and 2 cut: the all-reduce fails at once naming the other piece's ranks: ${two_msg#TWO }" ;;
*) tap not-ok "cables 0 and 2 cut: no failure naming the unreachable ranks (${two_msg:-none})" ;;
esac
if [ $topo_lines -ge 2 ]; then
	tap ok "maia-smi topo names the failovers ($topo_lines ports)"
else
	tap not-ok "maia-smi topo shows no failovers ($topo_lines ports)"
fi
if [ $srto_ports -eq 8 ] && [ $srto_bad = 0 ] && [ "$srto_json" = 8 ]; then
	tap ok "spurious_rto on all 8 ports, each at most its retransmits ($srto_sum undone in all), in maia-smi topo --json"
else
	tap not-ok "spurious_rto: $srto_ports ports in sysfs (want 8), over retransmits: $srto_bad, $srto_json in topo --json"
fi
echo "1..$n"
[ $failed = 0 ]
