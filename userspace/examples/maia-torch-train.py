#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A small torch.nn transformer-style model (embedding MLP, LayerNorm,
self-attention, GELU MLP) trained for a few steps (gradient-norm clipping,
then AdamW: fused on the device, torch's default on the CPU) on the Maia
device and, from the same initial weights and data, on the CPU; then
inference on both. Prints the losses side by side, the device's median step
time (host wall time), the largest difference of the inference outputs, and
which ops ran on the device and which on the CPU fallback. Run in the guest:
qemu/run-guest --host-root -- \\
    env PYTHONPATH=build/userspace/python userspace/examples/maia-torch-train.py [STEPS] [--strict]
--strict: no op may fall back to the CPU (maia.torch.strict()).
"""
import contextlib
import sys
import time

import torch

import maia.torch as mt


class Block(torch.nn.Module):
    def __init__(self, d=32, heads=4, hidden=64):
        super().__init__()
        self.heads = heads
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)
        self.head = torch.nn.Linear(d, 1)

    def forward(self, x):
        b, l, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (t.reshape(b, l, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, l, d))
        x = x + self.down(torch.nn.functional.gelu(self.up(self.ln2(x))))
        return self.head(x).squeeze(-1)


def main(steps=4, out=sys.stdout, strict=False):
    torch.manual_seed(0)
    cpu_model = Block()
    dev_model = Block()
    dev_model.load_state_dict(cpu_model.state_dict())
    dev_model.to(mt.device)
    x = torch.randn(4, 8, 32)
    target = x.sum(-1).tanh()
    opt_c = torch.optim.AdamW(cpu_model.parameters(), lr=0.01)
    opt_d = torch.optim.AdamW(dev_model.parameters(), lr=0.01, fused=True)
    xd, td = x.to(mt.device), target.to(mt.device)
    mt.reset_stats()
    losses, step_times = [], []
    t0 = time.time()
    with mt.strict() if strict else contextlib.nullcontext():
        for step in range(steps):
            pair = []
            for model, opt, xx, tt in ((cpu_model, opt_c, x, target), (dev_model, opt_d, xd, td)):
                ts = time.time()
                opt.zero_grad()
                loss = torch.nn.functional.mse_loss(model(xx), tt)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                opt.step()
                pair.append(loss.item())
            step_times.append(time.time() - ts)
            losses.append(pair)
            print("step %d: loss cpu %.6f maia %.6f, maia step %.3f s"
                  % (step, pair[0], pair[1], step_times[-1]), file=out)
        with torch.no_grad():
            y_cpu = cpu_model(x)
            y_dev = dev_model(xd).cpu()
    step_median = sorted(step_times)[len(step_times) // 2]
    print("maia step time: median %.3f s over %d steps (host wall time)"
          % (step_median, steps), file=out)
    diff = float((y_cpu - y_dev).abs().max())
    scale = float(y_cpu.abs().max())
    print("inference: max |maia - cpu| %.3g (max |y| %.3g), %.1f s" % (diff, scale, time.time() - t0),
          file=out)
    dev_ops, cpu_ops = mt.device_stats(), mt.fallback_stats()
    print("ran on the device: " + ", ".join("%s x%d" % kv for kv in sorted(dev_ops.items())),
          file=out)
    print("ran on the CPU fallback: " + ", ".join("%s x%d" % kv for kv in sorted(cpu_ops.items())),
          file=out)
    return {"losses": losses, "diff": diff, "scale": scale, "device_ops": dev_ops,
            "fallback_ops": cpu_ops, "step_median": step_median}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--strict"]
    r = main(steps=int(args[0]) if args else 4, strict="--strict" in sys.argv[1:])
    ok = r["diff"] <= 1e-3 * max(1.0, r["scale"])
    print("maia-torch-train: %s" % ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)
