#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check's "python" suite: one guest boot with the host's root shared
# read-only (run-guest --host-root) runs the maia module tests, then the
# PyTorch backend tests in one process, so `import torch` (45-100 s under
# TCG) is paid once. Prints TAP; non-zero exit if any failed (124 timeout,
# 125 guest died). Runs the venv's python (torch 2, numpy: made by
# qemu/setup/python-env.sh, part of make setup).
#
#   tests/python/run-in-guest.sh [--no-build]
set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
case "${1:-}" in
--no-build) build=(--no-build) ;;
"") ;;
*) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac
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
exec "$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --host-root --fail-on-taint --loglevel 1 \
	--memory 3G --timeout 900 -- /bin/sh -c '
		cd "$1/tests/python" || exit 1
		export PYTHONPATH="$1/build/userspace/python"
		"$2" test_maia_module.py; a=$?
		"$2" test_torch_backend.py; b=$?
		[ $a = 0 ] && [ $b = 0 ]' sh "$TOP" "$PY"
