# SPDX-License-Identifier: MIT
"""What the device-op tests (test_torch_ops.py, test_torch_advindex.py,
test_tvp_ops.py) check a result with: against a reference computed on the
CPU, within a relative bound or bit for bit, and an error raised as CPU
torch raises it; and the backend's per-op device counters."""
import maia.torch as mt
from tap import raises


def close(got, ref, rel, what):
    """|got - ref| <= rel max(1, max |ref|), against ref computed in float64;
    NaN where the reference has NaN."""
    got = got.detach().cpu().double()
    ref = ref.detach().cpu().double()
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    bound = rel * max(1.0, float(ref.abs().max()) if ref.numel() else 1.0)
    err = float((got - ref).abs().max()) if ref.numel() else 0.0
    assert err <= bound or (got.isnan() == ref.isnan()).all() and err != err, \
        "%s: max |err| %.3g > %.3g" % (what, err, bound)


def exact(got, ref, what):
    """got equals ref in dtype, shape and every element (NaN where ref has NaN)."""
    got = got.detach().cpu()
    assert got.dtype == ref.dtype and got.shape == ref.shape, (what, got.dtype, ref.dtype, got.shape, ref.shape)
    same = got == ref
    if got.is_floating_point():
        same |= got.isnan() & ref.isnan()
    assert bool(same.all()), "%s differs at %s" % (what, (~same).nonzero()[:5].tolist())


def dev_count(name):
    """How many times the backend ran op name on the device."""
    return mt.device_stats().get(name, 0)


def same_error(fn_dev, fn_cpu):
    """fn_dev raises what fn_cpu raises: the same exception type and first line."""
    try:
        fn_cpu()
    except Exception as e:  # noqa: BLE001 (whatever CPU torch raises)
        ref = e
    else:
        raise AssertionError("CPU torch did not raise")
    got = raises(type(ref), fn_dev)
    assert str(got).splitlines()[0] == str(ref).splitlines()[0], (str(got), str(ref))
