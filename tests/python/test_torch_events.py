# SPDX-License-Identifier: MIT
"""Event timing on the maia device (userspace/torch/device.cpp) in the
guest: torch.maia.Event(enable_timing=True) records a TIMESTAMP command on
the device's stream, and elapsed_time() is the device time between two, in
milliseconds.

The device's clock is its modeled time (Documentation/hw/time-model.rst):
how long the work takes on the chip model, the same on an idle and a
loaded host. So what is checked is deterministic: a GEMM between two
events takes at least its flops at the chip's FP32 peak (the sysfs model/
directory's peak_gflops_fp32; a throttled clock only slows it down) plus
the GEMM job's fixed cost (job_ns), more than the same events around
nothing; the errors for unrecorded and non-timing events are torch.cuda's
(torch's ValueError and message)."""
import math
import time

import torch

import maia
import maia.torch as mt
from tap import raises, run, test

DEV = mt.device
NOT_RECORDED = "Both events must be recorded before calculating elapsed time."
NO_TIMING = "Both events must be created with argument 'enable_timing=True'."


def model(name):
    """A number of maia:0's chip model, from sysfs (the driver's model/ group)."""
    pci = maia.Device(0).info()["pci_address"]
    with open("/sys/bus/pci/devices/%s/model/%s" % (pci, name)) as f:
        return int(f.read())


def timed(fn):
    """Device milliseconds between two timing events around fn()'s ops."""
    start, end = torch.maia.Event(enable_timing=True), torch.maia.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    return start.elapsed_time(end)


@test
def elapsed_time_finite():
    """Around nothing, around a small op, and an event re-recorded: >= 0 and finite."""
    x = torch.ones(256, device=DEV)
    for fn in (lambda: None, lambda: x.add_(1)):
        ms = timed(fn)
        assert math.isfinite(ms) and ms >= 0, ms
    start, end = torch.maia.Event(enable_timing=True), torch.maia.Event(enable_timing=True)
    for _ in range(3):
        start.record()
        x.mul_(0.5)
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end)
        assert math.isfinite(ms) and ms >= 0, ms
    assert float(x[0]) == 2.0 / 8


@test
def gemm_takes_its_modeled_time():
    """A 512^3 FP32 GEMM between the events: at least 2 m n k / peak plus a
    job's fixed cost more than nothing between them (modeled time: exact
    inequalities, no host timing; test_torch_backend.py checks GEMM values)."""
    n = 512
    a = torch.rand(n, n, generator=torch.Generator().manual_seed(3))
    ad = a.to(DEV)
    torch.maia.synchronize()
    empty = timed(lambda: None)
    out = []
    with mt.strict():
        gemm = timed(lambda: out.append(ad @ ad))
    bound_ms = (2.0 * n ** 3 / (model("peak_gflops_fp32") * 1e9) + model("job_ns") * 1e-9) * 1e3
    print("# device ms: nothing %.6f, %d^3 GEMM %.6f, bound %.6f more" % (empty, n, gemm, bound_ms))
    assert gemm - empty >= bound_ms, (gemm, empty, bound_ms)
    assert out[0].shape == (n, n)          # strict: the GEMM ran on the device


@test
def events_in_stream_order():
    """Three events around two GEMMs: the stamps are in stream order, and the
    parts add up to the whole."""
    ad = torch.rand(256, 256).to(DEV)
    ev = [torch.maia.Event(enable_timing=True) for _ in range(3)]
    ev[0].record()
    y = ad @ ad
    ev[1].record()
    y = y @ ad
    ev[2].record()
    ev[2].synchronize()
    first, second, whole = ev[0].elapsed_time(ev[1]), ev[1].elapsed_time(ev[2]), ev[0].elapsed_time(ev[2])
    assert first > 0 and second > 0, (first, second)
    assert abs(first + second - whole) <= 1e-9 * max(1.0, whole), (first, second, whole)
    assert ev[2].elapsed_time(ev[0]) == -whole
    del y


@test
def errors_are_torch_cudas():
    """Unrecorded events and events without timing raise torch's ValueError
    with torch.cuda's message; not-yet-done events either work or raise
    torch's "must be completed"."""
    t1, t2 = torch.maia.Event(enable_timing=True), torch.maia.Event(enable_timing=True)
    raises(ValueError, t1.elapsed_time, t2, match=NOT_RECORDED)
    t1.record()
    raises(ValueError, t1.elapsed_time, t2, match=NOT_RECORDED)
    raises(ValueError, t2.elapsed_time, t1, match=NOT_RECORDED)
    p1, p2 = torch.maia.Event(), torch.maia.Event()
    p1.record()
    p2.record()
    p2.synchronize()
    raises(ValueError, p1.elapsed_time, p2, match=NO_TIMING)
    t1.synchronize()
    raises(ValueError, t1.elapsed_time, p2, match=NO_TIMING)
    raises(ValueError, p1.elapsed_time, t1, match=NO_TIMING)
    # Not waited for: torch's Event checks completion first, as torch.cuda's does.
    ad = torch.rand(256, 256).to(DEV)
    t1.record()
    y = ad @ ad
    t2.record()
    try:
        ms = t1.elapsed_time(t2)
        assert ms > 0, ms
    except RuntimeError as e:
        assert "Both events must be completed before calculating elapsed time." in str(e), str(e)
    t2.synchronize()
    assert t1.elapsed_time(t2) > 0
    del y


@test
def many_events():
    """More timing events than one stamp buffer holds (512), recorded, timed
    and freed twice over: slots are reused, every interval >= 0."""
    x = torch.ones(16, device=DEV)
    for _ in range(2):
        evs = [torch.maia.Event(enable_timing=True) for _ in range(520)]
        for e in evs:
            e.record()
        x.add_(1)
        evs[-1].synchronize()
        ms = [evs[i].elapsed_time(evs[i + 1]) for i in range(0, len(evs) - 1, 50)]
        assert all(math.isfinite(m) and m >= 0 for m in ms), ms
        del evs
    assert float(x[0]) == 3.0


@test
def summary():
    """Print how long the file took (not a check)."""
    print("# test_torch_events.py: %.1f s" % (time.monotonic() - START))


if __name__ == "__main__":
    START = time.monotonic()
    run("torch events")
