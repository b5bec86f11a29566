# SPDX-License-Identifier: MIT
"""torch.distributed's maia all-reduce beside libmaia's (tests/run-bench).

In a guest of 4 ring-cabled devices: forks 4 ranks (one per device, torch
imported once), each times ITERS torch.distributed.all_reduce calls of
BYTES of float32 (sum, async_op=True, waiting for the last) after WARMUP,
between barriers; the time is the slowest
rank's. Then maia-coll-perf runs the C collective of the same size, count
and iterations on the same devices. Prints one JSON line,
torch_allreduce_busbw_n4, with nccl-tests' busbw (algbw x 2(n-1)/n) and the C
collective's as its baseline.
"""
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist

import maia.distributed  # noqa: F401  (registers the backend)

WORLD = 4
BYTES = int(os.environ.get("DIST_BYTES", 4 << 20))
ITERS = int(os.environ.get("DIST_ITERS", 20))
WARMUP = int(os.environ.get("DIST_WARMUP", 5))
TMP = tempfile.mkdtemp(prefix="maia-dist-bench-")


def rank_main(rank):
    dev = torch.device("maia", rank)
    torch.maia.set_device(dev)
    dist.init_process_group("maia", store=dist.FileStore(os.path.join(TMP, "store"), WORLD),
                            rank=rank, world_size=WORLD, device_id=dev,
                            timeout=datetime.timedelta(seconds=120))
    t = torch.full((BYTES // 4,), float(rank + 1), device=dev)
    for _ in range(WARMUP):
        dist.all_reduce(t)
    dist.barrier()
    # async_op: the calls queue up on the device as nccl-tests' on a stream; wait for the last.
    start = time.perf_counter()
    for _ in range(ITERS):
        work = dist.all_reduce(t, async_op=True)
    work.wait()
    dist.barrier()
    elapsed = time.perf_counter() - start
    # Rank r starts at r + 1: the first call gives every rank the sum of 1..WORLD,
    # each later one WORLD times that (exact in FP32: 10 * 2^48 after 25 calls).
    want = WORLD * (WORLD + 1) / 2 * WORLD ** (WARMUP + ITERS - 1)
    got = t[:1].cpu().item()
    wrong = 0 if abs(got - want) <= want * 1e-5 else 1
    with open(os.path.join(TMP, "r%d" % rank), "w") as f:
        json.dump({"s": elapsed, "wrong": wrong}, f)
    dist.destroy_process_group()


def main():
    pids = []
    for rank in range(WORLD):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                rank_main(rank)
                code = 0
            finally:
                os._exit(code)
        pids.append(pid)
    if any(os.waitpid(p, 0)[1] for p in pids):
        print("# a rank failed", file=sys.stderr)
        sys.exit(1)
    res = [json.load(open(os.path.join(TMP, "r%d" % r))) for r in range(WORLD)]
    t = max(r["s"] for r in res) / ITERS
    busbw = BYTES / t * 2 * (WORLD - 1) / WORLD / 1e9
    # The tree's build (the guest's root is the host's here, without its PATH).
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                        "userspace", "bin", "maia-coll-perf")
    c = subprocess.run([tool, "--op", "all_reduce", "--dtype", "fp32", "--json",
                        "--min-bytes", str(BYTES), "--max-bytes", str(BYTES),
                        "--iters", str(ITERS), "--warmup", str(WARMUP)],
                       capture_output=True, text=True, check=True)
    rows = [json.loads(line) for line in c.stdout.splitlines() if line.startswith("{")]
    base = [r for r in rows if r["bytes"] == BYTES][0]
    print(json.dumps({"name": "torch_allreduce_busbw_n%d" % WORLD, "value": round(busbw, 3),
                      "unit": "GB/s", "higher_is_better": True,
                      "baseline": "allreduce_busbw_n%d_%dMiB" % (WORLD, BYTES >> 20),
                      "baseline_value": base["busbw_gbs"],
                      "ratio": round(busbw / base["busbw_gbs"], 3) if base["busbw_gbs"] else None,
                      "wrong": sum(r["wrong"] for r in res) + base["wrong"]}), flush=True)


if __name__ == "__main__":
    main()
