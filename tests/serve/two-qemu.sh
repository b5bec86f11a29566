#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Serving across two QEMU processes, the decode one killed (Documentation/
# serving.rst, "Across QEMU processes"); part of the serve suite
# (run-in-guest.sh runs it last). TAP on stdout.
#
# QEMU A: device 0 prefills, device 1 is the spare; maia-serve --mode disagg
# --remote-decode maia.serve --spare 1 --kv-checkpoint --inject-xfer-hold 3
# and serve_test http-remote. QEMU B: device 0 decodes, maia-serve --mode
# decode-worker. The fabric is cabled as the cluster launcher cables a ring
# (Documentation/cluster.rst), over unix stream sockets in a private
# directory: A0 port 0 -> B0 port 1 (cable 0), B0 port 0 -> A1 port 1
# (cable 1), A1 port 0 -> A0 port 1 (a hub inside QEMU A). The control
# stream is a virtio-serial port "maia.serve" in each guest on one unix
# socket (A's QEMU listens, B's connects). When A's maia-serve says that it
# holds its third prefill's transfer (after the first layer's writes; a
# request is decoding in B meanwhile), this script kills B's QEMU with
# SIGKILL; both requests then end on A's spare. Every QEMU runs under
# run-guest's --timeout, and the hold is bounded too.
#
#   tests/serve/two-qemu.sh    (after run-in-guest.sh built build/serve-test)
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dir=$(mktemp -d /tmp/maia-serve-2q.XXXXXX)
apid= bpid=
cleanup() {
	# Only our own children: the two run-guest processes and B's QEMU.
	[ -n "$bpid" ] && kill "$bpid" 2>/dev/null
	[ -n "$apid" ] && kill "$apid" 2>/dev/null
	[ -s "$dir/b.pid" ] && kill -9 "$(cat "$dir/b.pid")" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2016 # expanded by the guest's shell
guest_a='
ip link set lo up
maia-serve --mode disagg --device 0 --remote-decode maia.serve --remote-timeout 150 --spare 1 \
	--kv-checkpoint --inject-xfer-hold 3 --port 8079 --ready-file /tmp/ready \
	>/tmp/serve.log 2>&1 &
pid=$!
# The host side kills B when it sees this line on the console.
( i=0
while ! grep -q "held" /tmp/serve.log && [ $i -lt 2400 ] && kill -0 $pid 2>/dev/null; do
	sleep 0.1; i=$((i + 1))
done
grep -h "held" /tmp/serve.log ) &
i=0
while [ ! -e /tmp/ready ] && [ $i -lt 1800 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
st=0
/root/serve/serve_test http-remote 8079 || st=1
kill -TERM $pid
wait $pid || { echo "# maia-serve exited with status $?"; st=1; }
[ $st = 0 ] || sed "s/^/# maia-serve: /" /tmp/serve.log
exit $st
'
# As the cluster suite: a TCG guest starved on the shared cores must not
# have its healthy device reset by the driver's 1 s heartbeat check.
common=(--no-build --devices 0 --smp 1 --memory 1G --timeout 240
	--module-args heartbeat_check_ms=10000)
vser=(--qemu-arg -device --qemu-arg virtio-serial-pci,id=mser
	--qemu-arg -device --qemu-arg virtserialport,bus=mser.0,chardev=msrv,name=maia.serve)
# shellcheck disable=SC2054 # commas inside QEMU option values
"$TOP/qemu/run-guest" "${common[@]}" \
	--file "$TOP/build/serve-test:/root/serve" \
	--qemu-arg -netdev --qemu-arg "stream,id=c0,server=on,addr.type=unix,addr.path=$dir/c0.sock" \
	--qemu-arg -netdev --qemu-arg "stream,id=c1,server=off,addr.type=unix,addr.path=$dir/c1.sock,reconnect-ms=100" \
	--qemu-arg -netdev --qemu-arg hubport,id=h0,hubid=0 \
	--qemu-arg -netdev --qemu-arg hubport,id=h1,hubid=0 \
	--qemu-arg -device --qemu-arg maia,hbm-size=1G,fabric0=c0,fabric1=h1 \
	--qemu-arg -device --qemu-arg maia,hbm-size=1G,fabric0=h0,fabric1=c1 \
	--qemu-arg -chardev --qemu-arg "socket,id=msrv,path=$dir/serve.sock,server=on,wait=off" \
	"${vser[@]}" -- sh -c "$guest_a" >"$dir/a.out" 2>&1 &
apid=$!
# B connects to A's sockets (its client ends would retry anyway): start it
# once A's QEMU listens, or has ended.
i=0
while [ ! -S "$dir/serve.sock" ] && [ $i -lt 600 ] && kill -0 "$apid" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
# shellcheck disable=SC2054 # commas inside QEMU option values
"$TOP/qemu/run-guest" "${common[@]}" \
	--qemu-arg -pidfile --qemu-arg "$dir/b.pid" \
	--qemu-arg -netdev --qemu-arg "stream,id=c1,server=on,addr.type=unix,addr.path=$dir/c1.sock" \
	--qemu-arg -netdev --qemu-arg "stream,id=c0,server=off,addr.type=unix,addr.path=$dir/c0.sock,reconnect-ms=100" \
	--qemu-arg -device --qemu-arg maia,hbm-size=1G,fabric0=c1,fabric1=c0 \
	--qemu-arg -chardev --qemu-arg "socket,id=msrv,path=$dir/serve.sock,server=off,reconnect-ms=100" \
	"${vser[@]}" -- maia-serve --mode decode-worker --remote-decode maia.serve --device 0 \
	--remote-timeout 150 >"$dir/b.out" 2>&1 &
bpid=$!

# Kill B's QEMU once A holds the transfer; bounded by the QEMUs' own timeouts.
killed=0
while kill -0 "$bpid" 2>/dev/null; do
	if grep -q "transfer of prefill 3 held" "$dir/a.out" && [ -s "$dir/b.pid" ]; then
		kill -9 "$(cat "$dir/b.pid")" && killed=1
		break
	fi
	sleep 0.2
done
wait "$bpid"
bst=$?
bpid=
wait "$apid"
ast=$?
apid=

tr -d '\r' <"$dir/a.out" | grep -E '^(not )?ok ' || true
tr -d '\r' <"$dir/a.out" | grep -vE '^(not )?ok |^TAP version|^1\.\.[0-9]+$' | sed 's/^/# A: /'
tr -d '\r' <"$dir/b.out" | sed 's/^/# B: /'
if [ $killed = 1 ]; then
	# run-guest reports a killed QEMU as its timeout (124).
	echo "ok - the decode worker's QEMU was killed (SIGKILL) while a prefill's K/V transfer to it was held"
else
	echo "not ok - the decode worker's QEMU was not killed during the held transfer (status $bst)"
fi
if [ $ast = 0 ]; then
	echo "ok - QEMU A's guest ended by itself with status 0"
else
	echo "not ok - QEMU A's run ended with status $ast"
fi
[ $killed = 1 ] && [ $ast = 0 ]
