#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make check's "serve" suite: the LLM serving stack (Documentation/serving.rst).
# First host_test on the host, under ASan and UBSan: the request parser
# (malformed and 20000 mutated bodies), reply escaping, the sampler, the KV
# block manager; and remote_test, the decode worker's protocol (llm_remote.c)
# against a scripted peer on a pty: framing, short reads, a peer gone
# mid-message, malformed messages. Then one guest boot with 5 devices: 0-2
# ring-cabled (device 0's port 0 reaches device 1, its port 1 device 2), 3-4
# a ring of two:
#  - serve_test model: device logits against the CPU double reference at every
#    generated position (BF16 and MXFP8 weights, three requests batched), and
#    the same requests disaggregated (prefill on device 0, K/V pushed layer by
#    layer with fabric remote writes, decode on device 1) give the same tokens,
#    and so does tensor-parallel decode on devices 3 and 4;
#  - serve_test kv: the KV-cache block manager and admission (a full queue
#    refuses, a full pool queues, every block comes back);
#  - serve_test http: maia-serve (disaggregated) on the guest's loopback, a
#    small fuzz of its API: malformed requests get 4xx and it keeps serving;
#    a completion and a streamed completion succeed; /metrics.
#  - serve_test fallback and http-fallback: with the job timeout at 1 s,
#    device 1's decode job hangs; the requests move to spare device 2 and end
#    with the single-device tokens, in-process and through maia-serve --spare.
# Then a second boot with 4 ring-cabled devices: serve_test tp4, tensor
# parallel over four (kv_heads 4) against one device. Last, two-qemu.sh:
# prefill and a spare in one QEMU, decode in another, which is killed
# while a prefill's K/V transfer to it is held and a request decodes there;
# both requests end on the spare with the same texts.
# TAP from serve_test, numbered across its three runs; exit status nonzero
# on any failure.
#
#   tests/serve/run-in-guest.sh [--no-build]
set -uo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=()
[ "${1:-}" = --no-build ] && build=(--no-build)
if [ ${#build[@]} -eq 0 ]; then
	make -C "$TOP" --no-print-directory userspace >&2 || exit 1
fi
make -C "$TOP/tests/serve" --no-print-directory -s OUTPUT="$TOP/build/serve-test" >&2 || exit 1
out=$(mktemp)
host=$(mktemp)
trap 'rm -f "$out" "$host"' EXIT
"$TOP/build/serve-host-test/host_test" >"$host" 2>&1
host_st=$?
"$TOP/build/serve-host-test/remote_test" >>"$host" 2>&1 || host_st=1

# In the guest (busybox sh): the three parts; the server's log on failure.
# shellcheck disable=SC2016 # expanded by the guest's shell
script='
st=0
/root/serve/serve_test model || st=1
/root/serve/serve_test kv || st=1
ip link set lo up
maia-serve --mode disagg --port 8077 --ready-file /tmp/ready >/tmp/serve.log 2>&1 &
pid=$!
i=0
while [ ! -e /tmp/ready ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
/root/serve/serve_test http 8077 || st=1
kill -TERM $pid
wait $pid || { echo "# maia-serve exited with status $?"; st=1; }
[ $st = 0 ] || sed "s/^/# maia-serve: /" /tmp/serve.log
# A hung decode job costs the job timeout: 1 s instead of 5.
echo 1000 >/sys/module/maia/parameters/job_timeout_ms
/root/serve/serve_test fallback || st=1
maia-serve --mode disagg --spare 2 --inject-decode-hang 4 --port 8078 \
	--ready-file /tmp/ready2 >/tmp/serve2.log 2>&1 &
pid=$!
i=0
while [ ! -e /tmp/ready2 ] && [ $i -lt 600 ] && kill -0 $pid 2>/dev/null; do sleep 0.1; i=$((i + 1)); done
/root/serve/serve_test http-fallback 8078 || st=1
kill -TERM $pid
wait $pid || { echo "# maia-serve --spare exited with status $?"; st=1; }
[ $st = 0 ] || sed "s/^/# maia-serve --spare: /" /tmp/serve2.log
exit $st
'
"$TOP/qemu/run-guest" ${build[@]+"${build[@]}"} --devices 5 --fabric rings:3,2 --timeout 600 \
	--file "$TOP/build/serve-test:/root/serve" -- sh -c "$script" >"$out" 2>&1
st=$?
# Tensor parallel over four: a second boot with a ring of four devices.
"$TOP/qemu/run-guest" --no-build --devices 4 --fabric ring --timeout 300 \
	--file "$TOP/build/serve-test:/root/serve" -- /root/serve/serve_test tp4 >>"$out" 2>&1 || st=1
# Across two QEMU processes, the decode one killed (two-qemu.sh).
"$TOP/tests/serve/two-qemu.sh" >>"$out" 2>&1 || st=1
# Renumber the eight TAP streams into one.
cat "$host" "$out" |
	awk '/^(not )?ok ([0-9]+ )?- /{ n++; sub(/ok ([0-9]+ )?- /, "ok " n " - "); print; next }
	     /^TAP version|^1\.\.[0-9]+$/ { next } { print "# " $0 } END { print "1.." n }'
if [ $host_st -ne 0 ] && ! grep -q '^not ok' "$host"; then
	echo "not ok - host_test or remote_test failed (status $host_st)"
fi
if [ $st -ne 0 ] && ! grep -q '^not ok' "$out"; then
	echo "not ok - the guest run failed (status $st)"
fi
[ $st = 0 ] && [ $host_st = 0 ]
