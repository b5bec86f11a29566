# SPDX-License-Identifier: MIT
"""make bench, in the guest under run-guest --host-root: a torch.nn.Linear
forward (FP32) on the Maia device through the PyTorch backend, beside the
same device work through libmaia from C (maia-linear-bench: the ratio is
the framework's overhead) and beside CPU torch on the guest's (emulated)
CPU. The backend is asynchronous (an op enqueues its job and returns):
the line compared with C is a call followed by torch.maia.synchronize(),
the same work as C's submit-and-wait; the "_enqueued" line is ITERS calls
back to back and one synchronize at the end, per call. Medians over ITERS
calls; the C baseline and the call-and-wait figure are taken in 3
alternating rounds (the machine's load drifts), each the median of its
rounds' medians. torch_linear_<shape>_us is the headline: nn.Linear's
call-and-wait over C's submit-and-wait, the ratio printed. Then the
breakdown, each part timed alone: the Python above the op (a no-op
nn.Module call, a parameter lookup), F.linear with its arguments bound
(the dispatcher and the backend's kernel) enqueued and with a synchronize,
a no-op torch.ops call and an idle synchronize; their floor (module + op +
synchronize) beside 1.5x C. JSON lines as bench-util.h."""
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import maia.torch as mt

# M K N of y = x W^T + b: a batch through a layer, and a decode-sized one
# where the fixed cost per call (the framework's, the job's) dominates.
SHAPES = [tuple(int(v) for v in shape.split())
          for shape in os.environ.get("LINEAR_SHAPES", "64 256 256;4 64 64").split(";")]
ITERS = int(os.environ.get("LINEAR_ITERS", "200"))
TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def median_us(fn):
    for _ in range(max(ITERS // 10, 1)):
        fn()
    samples = []
    for _ in range(ITERS):
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / 1000.0)
    return statistics.median(samples)


def emit(name, value, baseline=None, baseline_value=None):
    line = {"name": name, "value": round(value, 3), "unit": "us", "higher_is_better": False}
    if baseline:
        line.update(baseline=baseline, baseline_value=round(baseline_value, 3),
                    ratio=round(value / baseline_value, 4))
    print(json.dumps(line), flush=True)


class Nop(torch.nn.Module):
    def forward(self, x):
        return x


def c_baseline(m, k, n):
    """maia-linear-bench's JSON line for the shape."""
    c = subprocess.run([os.path.join(TOP, "build/userspace/bin/maia-linear-bench"),
                        str(m), str(k), str(n), str(ITERS)],
                       check=True, capture_output=True, text=True)
    return json.loads(c.stdout.strip().splitlines()[-1])


ROUNDS = 3


def bench(M, K, N):
    c_lines = []
    torch.manual_seed(0)
    lin = torch.nn.Linear(K, N)
    x = torch.randn(M, K)
    dlin = torch.nn.Linear(K, N).to(mt.device)
    dlin.load_state_dict(lin.state_dict())
    dx = x.to(mt.device)
    with torch.no_grad():
        ref = lin(x).double()
        got = dlin(dx).cpu().double()
        bound = K * 2.0 ** -23 * (x.double().abs() @ lin.weight.double().abs().t()) + 1e-6
        if not bool(((got - ref).abs() <= bound).all()):
            print("bench_linear: the device result is wrong", file=sys.stderr)
            return 1
        def call_and_wait():
            dlin(dx)
            torch.maia.synchronize()

        with mt.strict():
            t_rounds = []
            for _ in range(ROUNDS):
                c_lines.append(c_baseline(M, K, N))
                t_rounds.append(median_us(call_and_wait))
            t_dev = statistics.median(t_rounds)
            runs = []
            for _ in range(3):
                t0 = time.perf_counter_ns()
                for _ in range(ITERS):
                    dlin(dx)
                torch.maia.synchronize()
                runs.append((time.perf_counter_ns() - t0) / 1000.0 / ITERS)
            t_enq = statistics.median(runs)
            # Where the time goes: the same GEMM as one aten::addmm from Python,
            # F.linear (adds aten::linear's t() and its composite), and the
            # cost of any torch.ops call (an op that does no device work).
            weight, bias = dlin.weight, dlin.bias
            wt, flin, sync = weight.t(), torch.nn.functional.linear, torch.maia.synchronize
            t_addmm = median_us(lambda: torch.addmm(bias, dx, wt))
            t_flin = median_us(lambda: flin(dx, weight, bias))
            sync()

            def flin_and_wait():
                flin(dx, weight, bias)
                sync()
            t_flin_sync = median_us(flin_and_wait)
            t_floor = median_us(mt.ops.current_device)
            sync()
            # The Python above the op: an nn.Module call that does nothing, a
            # parameter's lookup (Module.__getattr__; nn.Linear makes two) and
            # a synchronize with nothing queued.
            nop = Nop()
            t_module = median_us(lambda: nop(dx))
            t_param = median_us(lambda: dlin.weight)
            t_sync = median_us(sync)
            # What one call does: jobs, host waits, buffer objects made.
            jobs, waits, bos = mt.jobs_submitted(), mt.host_waits(), mt.memory_stats()["bo_count"]
            for _ in range(ITERS):
                dlin(dx)
            torch.maia.synchronize()
            per_call = "per call: %.2f jobs, %.2f host waits, %.2f buffer objects made" % (
                (mt.jobs_submitted() - jobs) / ITERS, (mt.host_waits() - waits) / ITERS,
                (mt.memory_stats()["bo_count"] - bos) / ITERS)
        t_cpu = median_us(lambda: lin(x))
    shape = "%dx%dx%d" % (M, K, N)
    c_us = statistics.median(line["value"] for line in c_lines)
    c_line = dict(c_lines[0], value=round(c_us, 3), runs=[line["value"] for line in c_lines])
    print(json.dumps(c_line), flush=True)
    emit("torch_linear_%s_us" % shape, t_dev, c_line["name"], c_us)
    print("torch_linear_%s_us %.1f us (rounds %s) = %.2fx the C path's %.1f us (rounds %s)" % (
        shape, t_dev, ", ".join("%.1f" % t for t in t_rounds), t_dev / c_us, c_us,
        ", ".join("%.1f" % line["value"] for line in c_lines)), file=sys.stderr, flush=True)
    emit("linear_fp32_%s_maia_torch_enqueued" % shape, t_enq, c_line["name"], c_us)
    emit("linear_fp32_%s_maia_addmm_enqueued" % shape, t_addmm, c_line["name"], c_us)
    emit("linear_fp32_%s_maia_f_linear_enqueued" % shape, t_flin, c_line["name"], c_us)
    emit("linear_fp32_%s_maia_f_linear_sync" % shape, t_flin_sync, c_line["name"], c_us)
    emit("torch_op_call_floor_%s" % shape, t_floor)
    emit("torch_module_call_floor_%s" % shape, t_module)
    emit("torch_param_lookup_%s" % shape, t_param)
    emit("torch_synchronize_idle_%s" % shape, t_sync)
    # What no backend can remove: a no-op module call, a no-op op and an
    # idle synchronize, against the goal of 1.5x C.
    t_py = t_module + t_floor + t_sync
    emit("torch_python_floor_%s" % shape, t_py, c_line["name"], c_us)
    print("torch_linear_%s breakdown: module call %.1f + 2 parameter lookups %.1f + F.linear and "
          "synchronize %.1f (op floor %.1f, idle synchronize %.1f); Python floor %.1f us = %.2fx C "
          "(goal 1.5x = %.1f us)" % (shape, t_module, 2 * t_param, t_flin_sync, t_floor, t_sync,
                                     t_py, t_py / c_us, 1.5 * c_us), file=sys.stderr, flush=True)
    print("torch_linear_%s: %s" % (shape, per_call), file=sys.stderr, flush=True)
    emit("linear_fp32_%s_cpu_torch_guest" % shape, t_cpu, "torch_linear_%s_us" % shape, t_dev)
    return 0


sys.exit(max(bench(*shape) for shape in SHAPES))
