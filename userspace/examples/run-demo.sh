#!/bin/sh
# SPDX-License-Identifier: MIT
# The demo `make run` shows in the guest: list the devices, then run work
# on device 0 and check every result against a CPU reference. Exits
# non-zero on the first failure, naming it. POSIX sh (the guest has busybox).
set -u

failed=0
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
if [ "$failed" -ne 0 ]; then
	echo "run-demo: $failed step(s) failed" >&2
	exit 1
fi
echo "run-demo: all steps passed"
