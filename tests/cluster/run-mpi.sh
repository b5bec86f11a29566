#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Clusters of QEMU processes under Open MPI (Documentation/cluster.rst): each
# case is one mpirun of qemu/cluster/maia-cluster, one QEMU with one maia
# device per rank, ring-cabled over netdev sockets or shared-memory cables.
#
# A ring's cables can be of different kinds (--link takes a list: cable k,
# from rank k, is entry k mod its length), so one run covers several
# transports: one boot of each QEMU fewer than a run per transport.
#
#   1. -np 2 on two hosts made on this machine, each its own network
#      namespace (netns-hosts: eth0 with 10.77.0.K, a veth pair to a bridge
#      in a third namespace, nothing outside them; removed at the end, also
#      on failure), its own hostname, /etc/hosts and /tmp (mount and UTS
#      namespaces); mpirun runs on node1 and starts node2's Open MPI daemon
#      through an rsh agent, namespace-rsh, that enters node2's namespaces
#      (ip netns exec), with --hostfile, as the multi-host recipe runs them
#      (--host-addr auto: node1 resolves to 10.77.0.1, node2 to 10.77.0.2;
#      Open MPI's own traffic on eth0 too), one TCP cable (rank 0 to 1) and
#      one UDP cable (rank 1 to 0) (--link tcp,udp; a dgram netdev keeps no order or delivery
#      promise, and its socket buffer drops what it cannot hold, so both
#      ranks, each with a UDP end, get fabric-window=2 from the launcher),
#      with 1 % of the frames every device transmits dropped, on both
#      cables (fabric-drop-ppm=10000): every collective, FP32 and BF16, then
#      4 MiB all-reduces, 0 wrong; then 16 all-reduces of 4 MiB in FP32 and
#      16 in BF16 correct (with the runs before, well over the 2,350 DATA
#      frames a rank at which that none is dropped has a chance of 5e-11),
#      drops and retransmits counted
#   2. -np 4, two unix and two TCP cables (--link mixed, i.e. unix,tcp):
#      every collective, then 4 MiB all-reduces, then rank 2's QEMU is
#      killed mid-all-reduce (its cables: one TCP, one unix): every survivor
#      fails with an error naming the port and rank it waited on, or rank 2
#      out of reach (its two dead cables cut the ring twice), a new
#      communicator (a new id) works, live links answer, the dead one is
#      down, no device reset (maia-comm-failover)
#
#   3. -np 2 over unix cables: QMP set_link cuts cable 0 of the ring of two
#      while the ranks run 48 all-reduces of 8 MiB on one communicator: all
#      OK, 0 wrong, failovers counted at both ends (Documentation/hw/fabric.rst,
#      "Failover")
#
#   4. -np 4 over shared-memory cables (--link shm: fabricN-shm on
#      memory-backend-files in /dev/shm, no socket, no net layer): every
#      collective, then 4 MiB all-reduces, 0 wrong; the launchers unlinked
#      the cables' files (the script removes what is left of them at the
#      end, also on failure)
#
#   5. -np 2 over shared-memory cables, the guests asleep once up: rank 1's
#      launcher is SIGKILLed (its guard stops its QEMU and removes its
#      cable's file), then rank 0's is SIGTERMed (it stops its QEMU, removes
#      its file, says so and dies of the signal); mpirun ends with the job.
#      Each QEMU used to run on to its 150 s timeout
#
#   6. -np 2 over shared-memory cables, the guests asleep once up: mpirun
#      itself is SIGTERMed, as a batch system or a user's Ctrl-C stops a
#      job (it sends its ranks SIGTERM, then SIGKILL): both QEMUs end, both
#      cable files and the job directory go, and mpirun ends
#
#   tests/cluster/run-mpi.sh [--no-build]
#
# Prints TAP; exit status 0 if everything passed. Logs: build/cluster-tests/.
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=$TOP/build/cluster-tests
LAUNCHER=$TOP/build/cluster/maia-cluster
MPIRUN_TIMEOUT=300	# a bound for a wedged run, far above a normal one
case "${1:-}" in
--no-build) ;;
"") make -C "$TOP" --no-print-directory userspace cluster >&2 || exit 1 ;;
-h | --help) sed -n '3,54s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac
mkdir -p "$OUT"

if ! command -v mpirun >/dev/null; then
	echo "1..0 # SKIP no mpirun (openmpi-bin; make deps installs it)"
	exit 0
fi
# Every rank boots from the same base initramfs: build it once, before the
# ranks race for it.
"$TOP/qemu/guest/mkinitramfs" >/dev/null || exit 1

# As root, Open MPI wants to be told; more ranks than cores need
# --oversubscribe, and yielding when idle, or waiting ranks spin.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
MPIRUN=(timeout -k 10 "$MPIRUN_TIMEOUT" mpirun --oversubscribe --bind-to none
	--mca mpi_yield_when_idle 1)
# Four TCG guests on two shared cores: a device's worker thread can go
# unscheduled for more than the driver's 1 s heartbeat check, which then
# resets a healthy device (and takes its links down mid-collective). The
# heartbeat is not what these tests are about; check it every 10 s.
LAUNCH_OPTS=(--module-args heartbeat_check_ms=10000)

n=0
tap() { # tap ok|not-ok TEXT
	n=$((n + 1))
	if [ "$1" = ok ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; fi
}

# Every collective, FP32 and BF16, sizes 0 .. 64 KiB per rank, odd counts
# included (4 KiB x 16 steps: 0, 16 B, 256 B, 4 KiB, 64 KiB; the BF16 runs
# halve the counts). The long timeout covers boot skew between the QEMUs.
COLL='maia-fabric-links wait && maia-cluster-sync && maia-fabric-links wait && MAIA_COMM_TIMEOUT_MS=120000 maia-coll-perf --rank {rank} --nranks {nranks} --id {id0} --min-bytes 0 --max-bytes 65536 --step-factor 16 --iters 1 --warmup 0'

# Then 4 MiB all-reduces: enough frames to fill the sockets' buffers, which
# froze both QEMUs of a ring before qemu.sh made the stream server's
# socket non-blocking (every cable has a server end).
BIG='maia-coll-perf --rank {rank} --nranks {nranks} --id {id0} --op all_reduce --dtype fp32 --sizes 4M --iters 2 --warmup 0'

# 1: two hosts, each its own network namespace, a TCP cable and a UDP
# cable between them over the veth pairs, both lossy. Open MPI's own traffic
# (its daemons, MPI between the hosts) goes over eth0 too.
log=$OUT/np2-hosts-tcp-udp-loss.log
HOSTS=$OUT/hosts
NETNS=maia-cluster$$-
mkdir -p "$HOSTS"
# shellcheck disable=SC2317 # called by the traps
netns_down() { "$TOP/tests/cluster/netns-hosts" down "$NETNS"; }
# The shm cases' cable files, named after their job directory (rank 0's first
# line names it; QEMU makes them only after that line is out).
SHM_LOG=$OUT/np4-shm.log
STOP_LOG=$OUT/np2-stop.log
TERM_LOG=$OUT/np2-mpirun-term.log
rm -f "$SHM_LOG" "$STOP_LOG" "$TERM_LOG"
job_of() { # job_of LOG: the job directory's name
	sed -n 's|^maia-cluster: .*, job directory /tmp/\(maia-cluster\.[A-Za-z0-9]*\)$|\1|p' \
		"$1" 2>/dev/null | head -1
}
# shellcheck disable=SC2317 # called by the traps
shm_files() { # shm_files LOG
	local job
	job=$(job_of "$1")
	[ -n "$job" ] && compgen -G "/dev/shm/$job-cable*"
}
# is_ours PID PIDFILE: PID is a process of a job of ours (QEMU, or its
# timeout or run-guest: each has the job's pidfile among its arguments).
is_ours() { [ -n "$1" ] && tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | grep -qxF "$2"; }
# Case 5's (then 6's) QEMUs and their pidfiles, and its mpirun (for the traps).
declare -a stop_qemu=() stop_pidfile=()
stop_mpi=
# shellcheck disable=SC2317
stop_leftovers() {
	local r
	for r in "${!stop_qemu[@]}"; do
		is_ours "${stop_qemu[r]}" "${stop_pidfile[r]}" && kill -KILL "${stop_qemu[r]}"
	done
	if [ -n "$stop_mpi" ]; then kill -TERM "$stop_mpi" 2>/dev/null; fi
}
# shellcheck disable=SC2317
cleanup() {
	netns_down
	stop_leftovers
	{ shm_files "$SHM_LOG"; shm_files "$STOP_LOG"; shm_files "$TERM_LOG"; } | xargs -r rm -f --
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
rm -f "$OUT"/np2-r*.pcap
LOSSY='MAIA_COMM_TIMEOUT_MS=120000 maia-coll-perf --rank {rank} --nranks {nranks} --id {id0} --op all_reduce --min-bytes 4M --max-bytes 4M --iters 16 --warmup 0'
NP2=(mpirun --oversubscribe --bind-to none --mca mpi_yield_when_idle 1
	-np 2 --hostfile "$HOSTS/hostfile"
	--mca plm_rsh_agent "$TOP/tests/cluster/namespace-rsh"
	--mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0
	"$LAUNCHER" "${LAUNCH_OPTS[@]}" --link tcp,udp --host-addr auto
	--device-opts fabric-drop-ppm=10000
	--qemu-arg -object --qemu-arg "filter-dump,id=d0,netdev=fab0,file=$OUT/np2-r{rank}.pcap,maxlen=160" --
	sh -c "$COLL && $BIG && $LOSSY && maia-fabric-links counters --expect-retransmits")
if "$TOP/tests/cluster/netns-hosts" up "$NETNS" 2 "$HOSTS" >"$log" 2>&1; then
	# mpirun runs on node1, as after logging in there; the agent takes the
	# command as ssh would, one string for the remote shell. In the
	# background, so that a signal runs the traps at once (bash runs them
	# only between commands, and wait is one).
	MAIA_FAKE_HOSTS=$HOSTS MAIA_FAKE_HOSTS_NETNS=$NETNS \
		MAIA_FAKE_HOSTS_KEEP="$TOP:${MAIA_CACHE:-$HOME/.cache/maia-stack}" \
		timeout -k 10 "$MPIRUN_TIMEOUT" "$TOP/tests/cluster/namespace-rsh" node1 \
		"$(printf '%q ' "${NP2[@]}")" >>"$log" 2>&1 &
	wait $!
	rc=$?
else
	rc=1
	echo "# netns-hosts could not make the hosts (root, ip and veth/bridge support needed)"
	sed 's/^/# /' "$log"
fi
netns_down
grep -E '^maia-cluster: [0-9]+ ranks|^maia-cluster: rank [0-9] on|^\[rank [0-9]\] port [01]:' "$log" |
	sed 's/^/# /'
if grep -qx 'maia-cluster: rank 0 on host node1, address 10.77.0.1' "$log" &&
	grep -qx 'maia-cluster: rank 1 on host node2, address 10.77.0.2' "$log"; then
	tap ok "np2-hosts: rank 0 on host node1 (10.77.0.1), rank 1 on node2 (10.77.0.2), each its own network namespace, hostname and /tmp, mpirun on node1, node2 started through an rsh agent (ip netns exec)"
else
	tap not-ok "np2-hosts: the ranks did not run on node1 and node2 with their own addresses (status $rc, log $log)"
fi
# Each maia-coll-perf ends with "# done: 0 wrong elements" when all was right,
# and the next runs only then: COLL's and BIG's are a rank's first two.
done_lines() { grep -c "^\[rank $1\] # done: 0 wrong elements" "$log"; }
if [ "$(done_lines 0)" -ge 2 ] && [ "$(done_lines 1)" -ge 2 ]; then
	tap ok "np2-hosts-tcp-udp: 2 ranks over a TCP and a UDP cable with 1 % frame loss, every collective FP32+BF16, then 4 MiB all-reduces, 0 wrong"
else
	grep -E 'wrong elements|maia-coll-perf:|maia-cluster|FAILED' "$log" | sed 's/^/# /'
	tap not-ok "np2-hosts-tcp-udp: 2 ranks over a TCP and a UDP cable with 1 % frame loss (status $rc, log $log)"
fi
if [ $rc -eq 0 ] && [ "$(done_lines 0)" -eq 3 ] && [ "$(done_lines 1)" -eq 3 ]; then
	tap ok "np2-hosts-tcp-udp: 1 % frame loss, 16 all-reduces of 4 MiB FP32 and 16 BF16 0 wrong, retransmits counted"
else
	grep -E 'wrong elements|maia-coll-perf:|maia-fabric-links:|FAILED' "$log" | sed 's/^/# /'
	tap not-ok "np2-hosts-tcp-udp: 1 % frame loss, 4 MiB all-reduces and retransmits (status $rc, log $log)"
fi
# Rank 0's port 0 (the TCP cable) as QEMU's filter-dump saw it, both
# headers of every frame (maxlen=160), read by maia-fabric-pcap's own
# decoder: every frame well formed, collective chunks, and DATA frames sent
# again (the injected loss, seen on the wire).
pcap_sum=$("$TOP/build/userspace/bin/maia-fabric-pcap" --summary --check "$OUT/np2-r0.pcap" 2>&1)
pcap_rc=$?
printf "# %s\n" "$pcap_sum"
if [ $pcap_rc -eq 0 ] && echo "$pcap_sum" | grep -q ' 0 bad fabric frames' &&
	echo "$pcap_sum" | grep -qE 'DATA sent again [1-9]' && echo "$pcap_sum" | grep -qE 'NAK [1-9]' &&
	echo "$pcap_sum" | grep -qE 'COLL [1-9]' && echo "$pcap_sum" | grep -qE 'HELLO [1-9]'; then
	tap ok "np2-hosts: filter-dump of rank 0's TCP cable, decoded by maia-fabric-pcap: every frame well formed, HELLOs, collective chunks, NAKs naming the injected losses and the DATA sent again"
else
	tap not-ok "np2-hosts: filter-dump of rank 0's TCP cable (maia-fabric-pcap status $pcap_rc, $OUT/np2-r0.pcap)"
fi
# The decoder's check can fail: one bit flipped in the 10th whole frame (an
# ACK or KEEPALIVE: maxlen keeps short frames whole) must make it BAD CRC.
/usr/bin/python3 - "$OUT/np2-r0.pcap" "$OUT/np2-r0-flipped.pcap" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
off, whole = 24, 0
while off + 16 <= len(d):
    cap, orig = struct.unpack_from("<II", d, off + 8)
    off += 16
    if cap == orig and cap >= 62:
        whole += 1
        if whole == 10:
            d[off + 14 + 20] ^= 0x01    # a bit of the fabric header's seq
            break
    off += cap
open(sys.argv[2], "wb").write(d)
PY
flip_sum=$("$TOP/build/userspace/bin/maia-fabric-pcap" --check "$OUT/np2-r0-flipped.pcap" 2>&1)
flip_rc=$?
if [ $flip_rc -eq 1 ] && [ "$(grep -c 'BAD CRC' <<<"$flip_sum")" = 1 ] &&
	grep -q ' 1 bad fabric frames' <<<"$flip_sum"; then
	tap ok "np2-hosts: the same dump with one header bit flipped: maia-fabric-pcap --check finds that one frame BAD CRC and fails"
else
	tap not-ok "np2-hosts: one header bit flipped in the dump: maia-fabric-pcap status $flip_rc, $(grep -c 'BAD CRC' <<<"$flip_sum") BAD CRC lines"
fi

# 2: the collectives, then rank 2's QEMU dies mid-all-reduce. The survivors
# wait for each other (maia-cluster-sync) before and after the recovery
# checks, so that none probes a neighbour that has already powered off.
log=$OUT/np4-mixed-kill.log
FAILOVER='maia-comm-failover --rank {rank} --nranks {nranks} --ids {id1},{id2},{id3} --victim 2 --timeout-ms 2000 --bytes 65536'
"${MPIRUN[@]}" -np 4 "$LAUNCHER" "${LAUNCH_OPTS[@]}" --link mixed --timeout 150 --ids 4 --kill-rank 2 \
	--kill-on 'failover: running' --fail-on 'failed: maia_comm' -- \
	sh -c "$COLL && $BIG && $FAILOVER; maia-cluster-sync && $FAILOVER --recover; maia-cluster-sync" \
	>"$log" 2>&1
rc=$?
grep -E '^maia-cluster: rank|failover: rank [0-9]+ (failed|FAILED)' "$log" | sed 's/^/# /'
if [ "$(grep -c '# done: 0 wrong elements' "$log")" -eq 8 ]; then
	tap ok "np4-mixed: 4 ranks over unix and TCP cables, every collective FP32+BF16, then 4 MiB all-reduces, 0 wrong"
else
	tap not-ok "np4-mixed: 4 ranks over unix and TCP cables (log $log)"
fi
# Each survivor, and the port and rank its message must name: rank 1 sends to the
# dead rank on port 0, rank 3 receives from it on port 1, rank 0 waits on
# port 1 for rank 3, which stopped sending.
for want in "1 0 2" "3 1 2" "0 1 3"; do
	read -r r port peer <<<"$want"
	if grep -qE "^\[rank $r\] failover: rank $r failed: .*(waiting on port [01] for rank [0-9]|ranks 2\.\.2 \(1, in ring order\) are out of reach)" "$log" &&
		grep -q "^\[rank $r\] failover: rank $r ok" "$log"; then
		tap ok "np4-mixed-kill: survivor $r failed with an error naming a port and rank, then a new communicator, live links answer, the dead one is down, no reset"
	else
		grep -E "^\[rank $r\]" "$log" | tail -5 | sed 's/^/# /'
		tap not-ok "np4-mixed-kill: survivor $r (log $log)"
	fi
	# Ranks 1 and 3: the device's dead-peer check (MAIA_FABRIC_DEAD_MS)
	# takes the link to rank 2 DOWN before the collective's 2 s timeout,
	# and the report names that port. Rank 0: a timeout's report. Or, when
	# a chunk relayed round the other way meets the ring's second cut
	# (Documentation/hw/fabric.rst, "Failover"), every survivor names rank
	# 2, alone, out of reach.
	if grep -qE "^\[rank $r\] failover: rank $r failed: .*(waiting on port $port for rank $peer:|ranks 2\.\.2 \(1, in ring order\) are out of reach)" "$log"; then
		tap ok "np4-mixed-kill: survivor $r names port $port and rank $peer, or rank 2 out of reach"
	else
		grep -E "^\[rank $r\] failover: rank $r failed" "$log" | sed 's/^/# /'
		tap not-ok "np4-mixed-kill: survivor $r names port $port and rank $peer (log $log)"
	fi
done
if [ $rc -eq 0 ] && grep -q "^maia-cluster: rank 2: status 0, killed its QEMU" "$log"; then
	tap ok "np4-mixed-kill: rank 2's QEMU was killed mid-collective, every rank ended by itself"
else
	tap not-ok "np4-mixed-kill: mpirun status $rc (log $log)"
fi

# 3: failover between two QEMU processes (Documentation/hw/fabric.rst,
# "Failover"): a ring of two over unix cables. Once both have joined, each
# rank prints FO-START and runs 48 all-reduces of 8 MiB on one
# communicator; the host cuts cable 0 (rank 0's netdev fab0, to rank 1's
# port 1) with QMP set_link as soon as it sees rank 0's line, so that the
# cut lands during the run (the devices see it after MAIA_FABRIC_DEAD_MS).
# Every all-reduce ends OK, the last with 0 wrong, both ends of cable 0
# count failovers, and the communicator was never made again.
log=$OUT/np2-failover.log
FO_QMP=$OUT/np2-fo-qmp
rm -f "$FO_QMP"-*.sock
# When the links do not come up, each rank prints its ports' counters twice,
# 2 s apart (FO-DIAG lines: frozen counters tell a stopped device from a cable
# that never carried a frame).
FOCMD='{ maia-fabric-links wait || { for _ in 1 2; do for p in 0 1; do d=/sys/class/accel/accel0/device/fabric/port$p; echo "FO-DIAG port$p state $(cat $d/state) link_ups $(cat $d/link_ups) tx_frames $(cat $d/tx_frames) rx_frames $(cat $d/rx_frames) rx_drops $(cat $d/rx_drops) tx_errors $(cat $d/tx_errors)"; done; sleep 2; done; false; }; } && maia-cluster-sync && echo FO-START && echo FO-GO && MAIA_COMM_TIMEOUT_MS=60000 maia-coll-perf --rank {rank} --nranks {nranks} --id {id0} --op all_reduce --dtype fp32 --sizes 8M --iters 48 --warmup 0; f=/sys/class/accel/accel0/device/fabric; echo "FO failovers $(cat $f/port0/failovers) $(cat $f/port1/failovers) resent $(cat $f/port0/resent) $(cat $f/port1/resent)"'
"${MPIRUN[@]}" -np 2 "$LAUNCHER" "${LAUNCH_OPTS[@]}" --link unix --timeout 150 --ids 1 \
	--qemu-arg -qmp --qemu-arg "unix:$FO_QMP-{rank}.sock,server=on,wait=off" -- \
	sh -c "$FOCMD" >"$log" 2>&1 &
mpi_pid=$!
cut="no FO-START from rank 0"
for _ in $(seq 1 1500); do	# a bound of about 150 s, not a timing claim
	if grep -aq '^\[rank 0\] FO-START' "$log"; then
		cut=$("$TOP/tests/failover/qmp-set-link" "$FO_QMP-0.sock" fab0 off 2>&1)
		break
	fi
	kill -0 "$mpi_pid" 2>/dev/null || break
	sleep 0.1
done
wait "$mpi_pid"
rc=$?
grep -aE '^\[rank [01]\] (FO |FO-DIAG |maia-fabric-links: |maia-coll-perf: |# done)' "$log" | sed 's/^/# /'
# "[rank R] FO failovers PORT0 PORT1 resent PORT0 PORT1": cable 0 is rank 0's
# port 0 and rank 1's port 1.
fo0=$(grep -a '^\[rank 0\] FO failovers' "$log" | awk '{print $5}')
fo1=$(grep -a '^\[rank 1\] FO failovers' "$log" | awk '{print $6}')
re0=$(grep -a '^\[rank 0\] FO failovers' "$log" | awk '{print $8}')
if [ $rc -eq 0 ] && [ "$(grep -ac '^\[rank [01]\] # done: 0 wrong elements' "$log")" -eq 2 ] &&
	! grep -aq '^\[rank [01]\] maia-coll-perf: ' "$log" &&
	[ "${fo0:-0}" -ge 1 ] && [ "${fo1:-0}" -ge 1 ]; then
	tap ok "np2-failover: cable 0 cut by QMP ($cut) during 48 all-reduces of 8 MiB between two QEMU processes: all OK on one communicator, 0 wrong, failovers at both ends ($fo0, $fo1), rank 0 re-sent ${re0:-?} chunks as the link went down"
else
	tap not-ok "np2-failover: mpirun status $rc, set_link: $cut, failovers ${fo0:-?} ${fo1:-?} (log $log)"
fi

# 4: a ring of four over shared-memory cables: each cable a memory backend
# both QEMUs map, no socket and no net layer between them.
log=$SHM_LOG
"${MPIRUN[@]}" -np 4 "$LAUNCHER" "${LAUNCH_OPTS[@]}" --link shm --timeout 150 -- \
	sh -c "$COLL && $BIG" >"$log" 2>&1
rc=$?
grep -E '^maia-cluster: [0-9]+ ranks|^maia-cluster: rank [0-9]: status' "$log" | sed 's/^/# /'
if [ $rc -eq 0 ] && grep -q '^maia-cluster: 4 ranks, cables 0->1 shm 1->2 shm 2->3 shm 3->0 shm,' "$log" &&
	[ "$(grep -c '^\[rank [0-3]\] # done: 0 wrong elements' "$log")" -eq 8 ]; then
	tap ok "np4-shm: 4 ranks over shared-memory cables, every collective FP32+BF16, then 4 MiB all-reduces, 0 wrong"
else
	grep -E 'wrong elements|maia-coll-perf:|maia-cluster|FAILED' "$log" | sed 's/^/# /'
	tap not-ok "np4-shm: 4 ranks over shared-memory cables (status $rc, log $log)"
fi
left=$(shm_files "$log")
if [ $rc -eq 0 ] && [ -z "$left" ]; then
	tap ok "np4-shm: every rank's launcher unlinked its cable's file in /dev/shm"
else
	tap not-ok "np4-shm: cable files left in /dev/shm after the run (status $rc): $(echo $left)"
fi

# 5: stopping a job (qemu/cluster/maia-cluster.c, "Stopping"): a ring of two
# over shared-memory cables whose guests sleep once up. Rank 1's launcher is
# SIGKILLed: its guard stops its QEMU and removes its cable's file. Then rank
# 0's is SIGTERMed: it stops its QEMU itself, removes its file, says so and
# dies of the signal. --enable-recovery keeps mpirun from stopping rank 0
# when rank 1 dies (that would race our SIGTERM). Before the launcher stopped
# its QEMU, each QEMU ran on to its 150 s timeout; the bounds below (60 s)
# are on processes vanishing, not a claim on time. Only the pids of this
# job are signalled: QEMUs named by its pidfiles, launchers found above them.
up() { grep -aq "^\[rank $1\] STOP-UP" "$log"; }
# start_idle_job LOG [MPIRUN OPTION...]: cases 5 and 6's job, two ranks cabled
# over shm whose guests say STOP-UP and then idle; sets log, stop_mpi (the
# background timeout+mpirun), job, stop_pidfile[] and stop_qemu[] once both
# guests are up (or the job ended, or about 150 s went by).
start_idle_job() {
	log=$1
	shift
	: >"$log"
	stop_qemu=() stop_pidfile=()
	"${MPIRUN[@]}" "$@" -np 2 "$LAUNCHER" "${LAUNCH_OPTS[@]}" --link shm --timeout 150 \
		--ids 1 -- sh -c 'echo STOP-UP; echo; exec sleep 600' >"$log" 2>&1 &
	stop_mpi=$!
	for _ in $(seq 1 1500); do	# a bound of about 150 s for both guests to boot
		if up 0 && up 1; then break; fi
		kill -0 "$stop_mpi" 2>/dev/null || break
		sleep 0.1
	done
	job=$(job_of "$log")
	for r in 0 1; do
		stop_pidfile[r]=/tmp/$job/qemu-rank$r.pid
		stop_qemu[r]=$(cat "${stop_pidfile[r]}" 2>/dev/null)
	done
}
start_idle_job "$STOP_LOG" --enable-recovery
# launcher_of PID: the maia-cluster above PID (QEMU <- timeout <- run-guest <- it)
launcher_of() {
	local p=$1 i
	for i in 1 2 3 4 5; do
		p=$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')
		[ -n "$p" ] || return 1
		if [ "$(ps -o comm= -p "$p")" = maia-cluster ]; then echo "$p"; return 0; fi
	done
	return 1
}
# gone_within SECONDS CONDITION...: polls until CONDITION holds (a bound, not a timing claim)
gone_within() {
	local i limit=$(($1 * 10))
	shift
	for ((i = 0; i < limit; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}
declare -a sl
for r in 0 1; do
	sl[r]=$(launcher_of "${stop_qemu[r]:-0}")
done
rank_gone() { ! is_ours "${stop_qemu[$1]}" "${stop_pidfile[$1]}" && [ ! -e "/dev/shm/$job-cable$1" ]; }
echo "# job $job: QEMU ${stop_qemu[0]:-?} ${stop_qemu[1]:-?}, launchers ${sl[0]:-?} ${sl[1]:-?}"
if [ -n "$job" ] && up 0 && up 1 && is_ours "${stop_qemu[0]}" "${stop_pidfile[0]}" && is_ours "${stop_qemu[1]}" "${stop_pidfile[1]}" &&
	[ -n "${sl[0]}" ] && [ -n "${sl[1]}" ] && [ -e "/dev/shm/$job-cable0" ] && [ -e "/dev/shm/$job-cable1" ]; then
	kill -KILL "${sl[1]}"
	if gone_within 60 rank_gone 1 && is_ours "${stop_qemu[0]}" "${stop_pidfile[0]}"; then
		tap ok "np2-stop: rank 1's launcher SIGKILLed: its guard stopped its QEMU and removed its cable's file; rank 0's QEMU runs on"
	else
		tap not-ok "np2-stop: rank 1's launcher SIGKILLed: its QEMU $(is_ours "${stop_qemu[1]}" "${stop_pidfile[1]}" && echo still runs || echo is gone), $(ls /dev/shm/"$job"-cable* 2>/dev/null | wc -l) cable files left (log $log)"
	fi
	kill -TERM "${sl[0]}"
	if gone_within 60 rank_gone 0 &&
		grep -aq '^\[rank 0\] maia-cluster: signal 15: QEMU and run-guest ended, files removed' "$log"; then
		tap ok "np2-stop: rank 0's launcher SIGTERMed: it stopped its QEMU, removed its cable's file and said so"
	else
		tap not-ok "np2-stop: rank 0's launcher SIGTERMed: its QEMU $(is_ours "${stop_qemu[0]}" "${stop_pidfile[0]}" && echo still runs || echo is gone), $(ls /dev/shm/"$job"-cable* 2>/dev/null | wc -l) cable files left (log $log)"
	fi
	if gone_within 60 eval '! kill -0 "$stop_mpi" 2>/dev/null'; then
		wait "$stop_mpi"
		rc=$?
		stop_mpi=
		if [ ! -e "/tmp/$job" ]; then
			tap ok "np2-stop: mpirun ended with the job (status $rc), the job directory removed"
		else
			tap not-ok "np2-stop: mpirun ended (status $rc) but left /tmp/$job: $(ls "/tmp/$job")"
		fi
	else
		tap not-ok "np2-stop: mpirun still runs 60 s after its ranks were stopped (log $log)"
	fi
else
	tap not-ok "np2-stop: the job did not come up (job '$job', log $log)"
	for _ in 1 2; do tap not-ok "np2-stop: not run"; done
fi
# Whatever is left of this job's processes, by their pids.
stop_leftovers
if [ -n "$stop_mpi" ]; then wait "$stop_mpi" 2>/dev/null; fi
stop_mpi=

# 6: mpirun's own stop: SIGTERM to the mpirun this script started (under
# timeout(1), whose child it is). mpirun sends each launcher SIGTERM, and
# SIGKILL a second later: the launcher's own stop or its guard ends its QEMU
# and removes its files either way. The bound (60 s) is on processes
# vanishing, not a claim on time.
start_idle_job "$TERM_LOG"
mpi=$(ps -o pid= --ppid "$stop_mpi" 2>/dev/null | tr -d ' ' | head -1)
[ -n "$mpi" ] && [ "$(ps -o comm= -p "$mpi")" = mpirun ] || mpi=
echo "# job $job: QEMU ${stop_qemu[0]:-?} ${stop_qemu[1]:-?}, mpirun ${mpi:-?}"
if [ -n "$job" ] && [ -n "$mpi" ] && up 0 && up 1 &&
	is_ours "${stop_qemu[0]}" "${stop_pidfile[0]}" && is_ours "${stop_qemu[1]}" "${stop_pidfile[1]}" &&
	[ -e "/dev/shm/$job-cable0" ] && [ -e "/dev/shm/$job-cable1" ]; then
	kill -TERM "$mpi"
	if gone_within 60 eval 'rank_gone 0 && rank_gone 1 && ! kill -0 "$stop_mpi" 2>/dev/null'; then
		wait "$stop_mpi"
		rc=$?
		stop_mpi=
		if [ ! -e "/tmp/$job" ]; then
			tap ok "np2-mpirun-term: mpirun SIGTERMed: both QEMUs ended, both cable files and the job directory removed, mpirun ended (status $rc)"
		else
			tap not-ok "np2-mpirun-term: mpirun SIGTERMed and ended (status $rc) but left /tmp/$job: $(ls "/tmp/$job")"
		fi
	else
		tap not-ok "np2-mpirun-term: 60 s after mpirun's SIGTERM: QEMU 0 $(rank_gone 0 && echo gone || echo left), QEMU 1 $(rank_gone 1 && echo gone || echo left), mpirun $(kill -0 "$stop_mpi" 2>/dev/null && echo runs || echo ended) (log $log)"
	fi
else
	tap not-ok "np2-mpirun-term: the job did not come up (job '$job', mpirun '${mpi:-}', log $log)"
fi
stop_leftovers
if [ -n "$stop_mpi" ]; then wait "$stop_mpi" 2>/dev/null; fi
stop_mpi=

echo "1..$n"
