#!/bin/sh
# SPDX-License-Identifier: MIT
# The demo `make run` shows in the guest: list the devices, then run work
# on device 0 and check every result against a CPU reference, then an
# all-reduce over every device when they are cabled as a fabric ring. Exits
# non-zero on the first failure, naming it. POSIX sh (the guest has busybox).
set -u

failed=0
serve_demo() {
	ip link set lo up || return 1
	rm -f /tmp/maia-serve.ready
	maia-serve --mode disagg --port 8000 --ready-file /tmp/maia-serve.ready \
		2>/tmp/maia-serve.log &
	pid=$!
	i=0
	while [ ! -e /tmp/maia-serve.ready ] && [ $i -lt 300 ] && kill -0 $pid 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	maia-serve-bench --url 127.0.0.1:8000 --prompt "The Maia accelerator" --max-tokens 32 \
		--temperature 0.8 --top-k 40 --seed 7
	st=$?
	kill -TERM $pid
	wait $pid || st=1
	[ $st = 0 ] || cat /tmp/maia-serve.log
	return $st
}
step() {
	echo "==> $*"
	if ! "$@"; then
		echo "FAILED: $*" >&2
		failed=$((failed + 1))
	fi
}

step maia-smi
step maia-hello
step maia-smi ping -n 100
step maia-gemm
step maia-gemm-mxfp8
step maia-mlp
step maia-transformer
# The device time model: how long the same GEMMs take on the chip model
# (Maia 100 by default), and what the power controller does under a
# sustained GEMM load at the 500 W TDP beside a 700 W cap.
step maia-model-bench --throttle 4
step maia-model-bench --throttle 4 --cap 700
# Several devices cabled as a fabric ring (make run boots four): their links,
# then an all-reduce over all of them, checked element by element against
# the CPU's result, with its bus bandwidth.
ndev=$(ls /dev/accel 2>/dev/null | wc -l)
if [ "$ndev" -ge 2 ] && [ -e /sys/class/accel/accel0/device/fabric_serial ]; then
	step maia-smi topo
	step maia-coll-perf --op all_reduce --dtype all --min-bytes 1M --max-bytes 16M \
		--step-factor 4 --iters 3
	# LLM serving (Documentation/serving.rst): maia-serve disaggregated
	# (prefill on device 0, K/V pushed layer by layer over the fabric,
	# decode on device 1) on the loopback, one completion through its API.
	step serve_demo
fi
if [ "$failed" -ne 0 ]; then
	echo "run-demo: $failed step(s) failed" >&2
	exit 1
fi
echo "run-demo: all steps passed"
