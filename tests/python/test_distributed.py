# SPDX-License-Identifier: MIT
"""torch.distributed's maia backend (maia.distributed), one process per device.

With 6 devices cabled as two rings, devices 0-1 and 2-5 (run-guest --devices
6 --fabric rings:2,4: run-distributed.sh), 4 ranks on devices 2-5, then 2 on
devices 0-1; with fewer (the python suite's 2 in a ring), 2 ranks only, whose
checkpoint the CPU resumes. This process imports torch once and forks the
ranks (no rank pays the import again). Each rank checks every collective against the CPU's
result computed from all ranks' inputs (small integers: exact in any order),
trains a small MLP with DistributedDataParallel and compares its weights with
the same training on one device over the same global batch, and the first
run saves a checkpoint (state_dict to a host file) whose next loss the later
run and the CPU reproduce. TAP: one line per check and world size, ok when
every rank passed it.
"""
import datetime
import os
import sys
import tempfile
import time
import traceback

import torch
import torch.distributed as dist
import torch.nn as nn

import maia.distributed  # noqa: F401  (registers the backend)

# Weights after DDP and after one device differ by float rounding of the
# gradient's sum order only: at most this, elementwise (absolute).
WEIGHT_BOUND = 1e-5
LOSS_BOUND = 1e-5
BATCH = 16			# the global batch, split evenly over the ranks
STEPS = 3
TMP = tempfile.mkdtemp(prefix="maia-dist-")
CKPT = os.path.join(TMP, "ckpt.pt")
# torch 2.13's names for the tensor forms (the older ones warn).
ALL_GATHER_SINGLE = getattr(dist, "all_gather_single", dist.all_gather_into_tensor)
REDUCE_SCATTER_SINGLE = getattr(dist, "reduce_scatter_single", dist.reduce_scatter_tensor)


def inputs(rank, n, dtype=torch.float32):
    """Rank's input: small integers, exact in FP32 and BF16 in any summation order."""
    return ((torch.arange(n) * (rank + 3) + rank) % 17 - 8).to(dtype)


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def batch():
    g = torch.Generator().manual_seed(1)
    return torch.randn(BATCH, 8, generator=g), torch.randn(BATCH, 4, generator=g)


def check_all_reduce(rank, world, dev):
    n = 1000
    for dtype in (torch.float32, torch.bfloat16):
        every = [inputs(r, n, dtype).float() for r in range(world)]
        for op, ref in ((dist.ReduceOp.SUM, sum(every)),
                        (dist.ReduceOp.MAX, torch.stack(every).max(0).values),
                        (dist.ReduceOp.MIN, torch.stack(every).min(0).values),
                        (dist.ReduceOp.AVG, sum(every) / world)):
            if op == dist.ReduceOp.AVG and dtype == torch.bfloat16:
                continue
            t = inputs(rank, n, dtype).to(dev)
            dist.all_reduce(t, op=op)
            got = t.cpu().float()
            assert torch.equal(got, ref.to(dtype).float()), (dtype, op, (got - ref).abs().max())


def check_async(rank, world, dev):
    """Calls queue on the device: a read after them sees all of them; wait() is clean."""
    t = inputs(rank, 4096).to(dev)
    works = [dist.all_reduce(t, async_op=True) for _ in range(3)]
    got = t.cpu()
    ref = sum(inputs(r, 4096) for r in range(world)) * world * world
    assert torch.equal(got, ref), (got - ref).abs().max()
    for w in works:
        assert w.wait() and w.is_completed() and w.is_success()
    g = torch.empty(world * 5, device=dev)
    w = ALL_GATHER_SINGLE(g, torch.full((5,), float(rank), device=dev), async_op=True)
    assert torch.equal(w.get_future().value()[0].cpu(),
                       torch.arange(world).float().repeat_interleave(5))


def check_all_gather(rank, world, dev):
    n = 257
    ref = [inputs(r, n) for r in range(world)]
    outs = [torch.empty(n, device=dev) for _ in range(world)]
    dist.all_gather(outs, inputs(rank, n).to(dev))
    for r in range(world):
        assert torch.equal(outs[r].cpu(), ref[r]), r
    flat = torch.empty(world * n, device=dev)
    ALL_GATHER_SINGLE(flat, inputs(rank, n).to(dev))
    assert torch.equal(flat.cpu(), torch.cat(ref))


def check_reduce_scatter(rank, world, dev):
    n = 130
    every = [inputs(r, world * n) for r in range(world)]
    ref = sum(every).view(world, n)[rank]
    out = torch.empty(n, device=dev)
    REDUCE_SCATTER_SINGLE(out, inputs(rank, world * n).to(dev))
    assert torch.equal(out.cpu(), ref)
    out2 = torch.empty(n, device=dev)
    dist.reduce_scatter(out2, list(inputs(rank, world * n).to(dev).view(world, n).unbind(0)))
    assert torch.equal(out2.cpu(), ref)


def check_broadcast(rank, world, dev):
    root = world - 1
    t = inputs(rank, 333).to(dev)
    dist.broadcast(t, src=root)
    assert torch.equal(t.cpu(), inputs(root, 333))
    # Any type moves as bytes: int64 (what DDP's parameter checks send).
    i = (torch.arange(5, dtype=torch.int64) * (rank + 1)).to(dev)
    dist.broadcast(i, src=0)
    assert torch.equal(i.cpu(), torch.arange(5, dtype=torch.int64))


def check_barrier(rank, world, dev):
    dist.barrier()


def check_errors(rank, world, dev):
    t = torch.ones(4, dtype=torch.int32, device=dev)
    try:
        dist.all_reduce(t)
    except Exception as e:  # noqa: BLE001 (the message is what is checked)
        assert "float32 and bfloat16" in str(e), e
    else:
        raise AssertionError("an int32 all_reduce did not fail")


def check_missing_peer(rank, world, dev):
    """A collective that the other ranks never join fails on rank 0 with a message
    naming the rank it waited for, its ring predecessor (the device's wait bounded
    at 2 s), no hang; in a group of its own."""
    os.environ["MAIA_COMM_TIMEOUT_MS"] = "2000"
    g = dist.new_group(list(range(world)))
    if rank == 0:
        t = torch.ones(16, device=dev)
        try:
            dist.all_reduce(t, group=g)
        except Exception as e:  # noqa: BLE001 (the message is what is checked)
            assert "for rank %d" % (world - 1) in str(e), e
            return "a missing peer: %s" % str(e).splitlines()[0][:160]
        raise AssertionError("an all-reduce without the other ranks did not fail")
    return None


def train(net, x, y, steps, opt=None):
    opt = opt or torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    return opt


def check_ddp(rank, world, dev):
    x, y = batch()
    share = BATCH // world
    lx, ly = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
    ddp = nn.parallel.DistributedDataParallel(model().to(dev))
    train(ddp, lx.to(dev), ly.to(dev), STEPS)
    one = model().to(dev)
    train(one, x.to(dev), y.to(dev), STEPS)
    worst = 0.0
    for (name, p), q in zip(ddp.module.named_parameters(), one.parameters()):
        d = (p.detach().cpu() - q.detach().cpu()).abs().max().item()
        assert d <= WEIGHT_BOUND, (name, d)
        worst = max(worst, d)
    return "DDP vs one device: largest weight difference %.3g (bound %g)" % (worst, WEIGHT_BOUND)


def next_loss(net, x, y):
    with torch.no_grad():
        return nn.functional.mse_loss(net(x), y).item()


def check_checkpoint(rank, world, dev):
    x, y = batch()
    share = BATCH // world
    lx, ly = x[rank * share:(rank + 1) * share].to(dev), y[rank * share:(rank + 1) * share].to(dev)
    net = model().to(dev)
    ddp = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    if world == WORLDS[0][0]:
        train(ddp, lx, ly, STEPS, opt)
        if rank == 0:
            torch.save({"model": {k: v.cpu() for k, v in net.state_dict().items()},
                        "opt": opt.state_dict()}, CKPT + ".tmp")
            os.rename(CKPT + ".tmp", CKPT)
        dist.barrier()
    else:
        ck = torch.load(CKPT)
        net.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
    # Both runs: one more step, then the global loss (the mean of equal shards' means).
    train(ddp, lx, ly, 1, opt)
    loss = torch.tensor([next_loss(net, lx, ly)], device=dev)
    dist.all_reduce(loss, op=dist.ReduceOp.AVG)
    with open(os.path.join(TMP, "loss-%d" % world), "w") as f:
        f.write(repr(loss.item()))


def worlds():
    """(ranks, first device) of each run: 4 on devices 2-5 then 2 on 0-1 when
    there are 6 devices (run-distributed.sh), else 2 on devices 0-1 (the
    python suite's ring of 2). Counted from the device nodes: this process
    opens no device before it forks."""
    n = len([d for d in os.listdir("/dev/accel") if d.startswith("accel")])
    return ((4, 2), (2, 0)) if n >= 6 else ((2, 0),)


WORLDS = worlds()
CHECKS = [check_all_reduce, check_async, check_all_gather, check_reduce_scatter, check_broadcast,
          check_barrier, check_errors, check_ddp, check_checkpoint, check_missing_peer]


def rank_main(rank, world, first):
    dev = torch.device("maia", first + rank)
    torch.maia.set_device(dev)
    # How long a device waits for a peer (libmaia's default 10 s): forked ranks
    # on a loaded 2-core machine drift apart by more than that (a rank's first
    # training step runs while its peer already waits in DDP's first collective).
    os.environ["MAIA_COMM_TIMEOUT_MS"] = "60000"
    store = dist.FileStore(os.path.join(TMP, "store-%d" % world), world)
    dist.init_process_group("maia", store=store, rank=rank, world_size=world, device_id=dev,
                            timeout=datetime.timedelta(seconds=60))
    ok = True
    with open(os.path.join(TMP, "result-%d-%d" % (world, rank)), "w") as out:
        for fn in CHECKS:
            try:
                start = time.monotonic()
                note = fn(rank, world, dev)
                out.write("%s ok\n" % fn.__name__)
                if rank == 0:
                    out.write("# rank 0: %s %.1f s%s\n" % (fn.__name__, time.monotonic() - start,
                                                         ": " + note if note else ""))
            except Exception:  # noqa: BLE001 (a failed check is reported, the rest run)
                ok = False
                out.write("%s FAIL\n" % fn.__name__)
                for line in traceback.format_exc().splitlines():
                    out.write("# rank %d: %s\n" % (rank, line))
            out.flush()
    dist.destroy_process_group()
    return ok


def run_world(world, first):
    pids = []
    for rank in range(world):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = 0 if rank_main(rank, world, first) else 1
            except BaseException:  # noqa: BLE001 (a child never returns into the parent's code)
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        pids.append(pid)
    codes = [os.waitpid(p, 0)[1] for p in pids]
    results = {}
    notes = []
    for rank in range(world):
        path = os.path.join(TMP, "result-%d-%d" % (world, rank))
        lines = open(path).read().splitlines() if os.path.exists(path) else []
        for line in lines:
            if line.startswith("#"):
                notes.append(line)
            else:
                name, verdict = line.split()
                results.setdefault(name, []).append(verdict == "ok")
    return codes, results, notes


def main():
    n = 0
    failed = False
    print("TAP version 13", flush=True)
    for world, first in WORLDS:
        start = time.monotonic()
        codes, results, notes = run_world(world, first)
        notes.append("# %d ranks: %.1f s" % (world, time.monotonic() - start))
        for fn in CHECKS:
            n += 1
            r = results.get(fn.__name__, [])
            good = len(r) == world and all(r)
            failed |= not good
            print("%s %d - distributed %d ranks: %s" % ("ok" if good else "not ok", n, world,
                                                         fn.__name__), flush=True)
        for line in notes:
            print(line, flush=True)
        if any(codes):
            print("# exit statuses %s" % codes, flush=True)
    # The checkpoint's next loss on the later worlds and on the CPU, against the first's.
    n += 1
    try:
        loss = {w: float(open(os.path.join(TMP, "loss-%d" % w)).read()) for w, _ in WORLDS}
        ref = loss[WORLDS[0][0]]
        x, y = batch()
        ck = torch.load(CKPT)
        net = model()
        net.load_state_dict(ck["model"])
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        opt.load_state_dict(ck["opt"])
        train(net, x, y, 1, opt)
        cpu = next_loss(net, x, y)
        print("# next loss: %s, CPU %.9g" % (", ".join("%d devices %.9g" % (w, loss[w])
                                                      for w, _ in WORLDS), cpu), flush=True)
        good = all(abs(v - ref) <= LOSS_BOUND for v in list(loss.values()) + [cpu])
    except Exception:  # noqa: BLE001 (reported as the check's failure)
        traceback.print_exc()
        good = False
    failed |= not good
    print("%s %d - distributed: checkpoint of %d ranks resumes on %sthe CPU" %
          ("ok" if good else "not ok", n, WORLDS[0][0],
           "".join("%d ranks and " % w for w, _ in WORLDS[1:])), flush=True)
    print("1..%d" % n, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
