#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check's "python" suite: one guest boot with the host's root shared
# read-only (run-guest --host-root) runs the maia module tests, then
# torch.distributed's maia backend on 2 ranks (forked before that process
# opens a device), the PyTorch backend tests with its TVP kernels' tests, then the model tests (convolution, batch norm,
# pooling, a CNN, a ViT, a training step) with Triton's tutorials and torch.compile's Inductor on the
# device, each file one process (A.py+B.py: one process for both, through
# run_group.py), so `import torch` (37-53 s under TCG) is paid twice. Prints TAP; non-zero exit if any failed (124 timeout,
# 125 guest died). Runs the venv's python (torch 2, numpy: made by
# qemu/setup/python-env.sh, part of make setup).
#
#   tests/python/run-in-guest.sh [--no-build] [TEST.py[+TEST.py...] ...]
#
# With no TEST.py: every suite file below, in that order.
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
if [ "${1:-}" = --no-build ]; then
	build=(--no-build)
	shift
fi
tests=("$@")
[ ${#tests[@]} -gt 0 ] ||
	tests=(test_maia_module.py test_distributed.py+test_torch_backend.py+test_torch_events.py+test_tvp_ops.py
		test_torch_models.py+test_torch_ops.py+test_torch_advindex.py+test_torch_scatter.py+test_torch_sort.py+test_torch_int.py+test_triton_tutorials.py+test_inductor.py+test_inductor_train.py)
for t in "${tests[@]}"; do
	for f in ${t//+/ }; do
		case $f in
		test_*.py) [ -f "$TOP/tests/python/$f" ] || { echo "run-in-guest: no tests/python/$f" >&2; exit 2; } ;;
		*) echo "usage: $0 [--no-build] [test_*.py[+test_*.py...] ...]" >&2; exit 2 ;;
		esac
	done
done
if [ ${#build[@]} -eq 0 ]; then
	make -C "$TOP" --no-print-directory userspace >&2
fi
PY=$("$TOP/qemu/setup/python-env.sh" --print-python)
if [ ! -x "$PY" ]; then
	echo "run-in-guest: no Python venv ($PY): make setup (qemu/setup/python-env.sh)" >&2
	exit 1
fi

# The guest mounts a fresh tmpfs on the host root's /tmp and keeps only the
# top /tmp directory of run-guest's current directory: a venv under /tmp
# (MAIA_CACHE=/tmp/...) is seen only when the guest starts there.
tmp_top() { case $1 in /tmp/?*) local t=${1#/tmp/}; echo "/tmp/${t%%/*}" ;; esac; }
run_dir=$TOP/tests/python
venv_tmp=$(tmp_top "$PY")
if [ -n "$venv_tmp" ]; then
	tree_tmp=$(tmp_top "$TOP")
	if [ -n "$tree_tmp" ] && [ "$tree_tmp" != "$venv_tmp" ]; then
		echo "run-in-guest: the venv ($venv_tmp) and the tree ($tree_tmp) are under two /tmp" \
			"directories; the guest keeps one: use a MAIA_CACHE outside /tmp" >&2
		exit 1
	fi
	run_dir=$venv_tmp
fi

cd "$run_dir"
# shellcheck disable=SC2016 # the script runs in the guest's shell
# The kernel logs the MMU fault the error-path test provokes: --loglevel 1.
# Two devices: test_torch_backend.py uses maia:0 and maia:1 from one process;
# cabled as a ring for test_distributed.py's two ranks (one process each).
exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --host-root --fail-on-taint --loglevel 1 \
	--devices 2 --fabric ring --memory 3G --timeout 1500 -- /bin/sh -c '
		top=$1 py=$2 rc=0
		shift 2
		cd "$top/tests/python" || exit 1
		export PYTHONPATH="$top/build/userspace/python"
		for t in "$@"; do
			case $t in
			*+*) "$py" run_group.py $(echo "$t" | tr + " ") || rc=1 ;;
			*) "$py" "$t" || rc=1 ;;
			esac
		done
		exit $rc' sh "$TOP" "$PY" "${tests[@]}"
