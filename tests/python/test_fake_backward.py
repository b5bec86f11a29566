# SPDX-License-Identifier: MIT
"""Backward of fake maia tensors on the host, with no Maia device (issue 31).
FakeTensorMode and AOTAutograd trace training graphs on maia without a
device (Documentation/python.rst, "torch.compile"). The device guard counts
maia:0 even then (userspace/torch/device.cpp), so torch's autograd engine
has a ready queue and a caller stream for it: backward() and autograd.grad()
give each leaf a fake maia gradient shaped, typed and strided as the same
graph's on the CPU, with autograd's worker threads on or off (AOTAutograd
turns them off: that case crashed), while torch.maia.device_count() and
torch.accelerator.device_count() still count the devices there are. Each
case runs in a forked child: a crash fails the case with its signal."""
import os
import signal
import sys
import threading
import traceback

import torch
import torch.nn.functional as F
from functorch.compile import aot_function, make_boxed_func
from torch._subclasses.fake_tensor import FakeTensorMode

import maia.torch  # noqa: F401 (registers the maia backend)
import tap
from tap import test


def in_child(fn):
    """Run fn in a forked child; its exception or its death by a signal fails the case."""
    sys.stdout.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            fn()
            msg = b""
        except BaseException:  # noqa: BLE001 (reported to the parent)
            msg = traceback.format_exc().encode()
        os.write(w, msg)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read().decode()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise AssertionError("%s crashed: %s" % (fn.__name__, signal.Signals(os.WTERMSIG(status)).name))
    assert os.WEXITSTATUS(status) == 0, "%s exited with %d" % (fn.__name__, os.WEXITSTATUS(status))
    assert not msg, msg


def model(x, w1, b1, w2, target):
    """A small MLP's loss: linear, GELU, a transposed weight, cross entropy."""
    h = F.gelu(F.linear(x, w1, b1))
    return F.cross_entropy(h @ w2.t(), target)


SHAPES = [(8, 16), (32, 16), (32,), (10, 32)]


def leaves(device):
    ts = [torch.randn(s, device=device, requires_grad=True) for s in SHAPES]
    return ts + [torch.randint(0, 10, (8,), device=device)]


def reference_grads():
    """The CPU's gradients of the same graph: what each fake one must look like."""
    args = leaves("cpu")
    model(*args).backward()
    return [(a.grad.shape, a.grad.dtype, a.grad.stride()) for a in args[:4]]


def check_grads(grads):
    ref = reference_grads()
    assert len(grads) == len(ref), (len(grads), len(ref))
    for g, (shape, dtype, stride) in zip(grads, ref):
        assert g is not None, "no gradient"
        assert g.device == torch.device("maia", 0), g.device
        assert (g.shape, g.dtype, g.stride()) == (shape, dtype, stride), (g.shape, g.dtype, g.stride())


@test
def backward_threads_on():
    def case():
        with FakeTensorMode():
            args = leaves("maia")
            model(*args).backward()
            check_grads([a.grad for a in args[:4]])
    in_child(case)


@test
def grad_threads_off():
    """As AOTAutograd traces: all of it on the calling thread (the crash)."""
    def case():
        with FakeTensorMode(), torch.autograd.set_multithreading_enabled(False):
            args = leaves("maia")
            check_grads(torch.autograd.grad(model(*args), args[:4]))
    in_child(case)


@test
def backward_on_another_thread():
    def case():
        out = []

        def run():
            try:
                with FakeTensorMode():
                    args = leaves("maia")
                    model(*args).backward()
                    check_grads([a.grad for a in args[:4]])
            except BaseException as e:  # noqa: BLE001 (re-raised below)
                out.append(e)
        t = threading.Thread(target=run)
        t.start()
        t.join()
        if out:
            raise out[0]
    in_child(case)


@test
def aot_autograd_joint_graph():
    """AOTAutograd's forward and backward graphs of the model on fake maia tensors."""
    def case():
        graphs = []

        def keep(gm, example_inputs):
            graphs.append(gm)
            return make_boxed_func(gm)
        f = aot_function(model, fw_compiler=keep, bw_compiler=keep)
        with FakeTensorMode():
            args = leaves("maia")
            f(*args).backward()
            check_grads([a.grad for a in args[:4]])
        assert len(graphs) == 2, len(graphs)
        bw = {str(n.target) for n in graphs[1].graph.nodes if n.op == "call_function"}
        for op in ("aten.mm.default", "aten.gelu_backward.default"):
            assert op in bw, (op, sorted(bw))
    in_child(case)


@test
def device_counts_are_real():
    """maia:0 for fake tensors does not make a device: the counts are the
    devices there are, and a real tensor on a missing device is an error."""
    n = torch.maia.device_count()
    print("# %d Maia devices" % n)
    assert torch.accelerator.device_count() == n, torch.accelerator.device_count()
    assert torch.maia.is_available() == (n > 0)
    assert torch.accelerator.is_available() == (n > 0)
    if n == 0:
        tap.raises(RuntimeError, torch.empty, 2, device="maia", match="there are 0 Maia devices")


if __name__ == "__main__":
    tap.run("fake maia backward")
