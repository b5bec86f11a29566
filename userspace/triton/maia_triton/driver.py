"""The Maia backend's driver (Documentation/triton.rst): active when the
maia PyTorch backend sees a device; the target, the current device and its
stream, and the launcher that hands a compiled kernel, its grid and its
packed arguments to torch.ops.maia.triton_launch (userspace/torch/
kernel_launch.cpp), which appends one KERNEL command to the device's stream."""

import struct
import time

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from .compiler import TARGET_ARCH, TARGET_BACKEND


def _maia_torch():
    """maia.torch when it imports and sees a device, else None."""
    try:
        import maia.torch  # noqa: F401 (loads the backend into torch)
        import torch
    except (ImportError, OSError):
        return None
    return torch if torch.maia.is_available() else None


def _f32(arg):
    return struct.unpack("<I", struct.pack("<f", float(arg)))[0]


def _pack(ty, arg, name, device):
    """One argument as the 64-bit word the kernel finds in its s register
    (device: the index of the maia device the kernel runs on)."""
    if ty.startswith("*"):
        if arg is None:
            return 0
        if not hasattr(arg, "data_ptr"):
            raise TypeError("maia: argument %s must be a tensor (%s), not %s" % (name, ty, type(arg).__name__))
        dev = getattr(arg, "device", None)
        if dev is not None and dev.type != TARGET_BACKEND:
            raise ValueError("maia: argument %s is on %s; Triton kernels on Maia take maia tensors" % (name, dev))
        # Each device has its own address space: a pointer of another device means nothing here.
        if dev is not None and getattr(dev, "index", None) is not None and dev.index != device:
            raise ValueError("maia: argument %s is on %s but the kernel runs on maia:%d, the current device "
                             "(torch.maia.set_device or torch.maia.device(...))" % (name, dev, device))
        # A maia tensor's data pointer is its device virtual address.
        return arg.data_ptr()
    if ty == "fp32":
        return _f32(arg)
    if ty in ("fp16", "bf16", "fp64"):
        raise TypeError("maia: scalar argument %s of type %s (fp32 only)" % (name, ty))
    # Integers: two's complement in 64 bits, as the scalar registers hold them.
    return int(arg) & 0xffffffffffffffff


def _signed(word):
    return word - (1 << 64) if word >> 63 else word


def _words(types, names, keep, args, device):
    """The launch's words, every argument through _pack (and its checks)."""
    return [_signed(_pack(types[i], args[i], names[i], device)) for i in keep]


def _packer(types, names, keep):
    """pack(args, device) -> the launch's words, written out for one
    kernel's signature (made once per kernel; a launch under TCG spent
    about 200 us in the generic loop). Pointers take the fast path when
    every one is a tensor on the kernel's device (Tensor.get_device(): a
    CPU-only torch has no other device with an index); anything else (None,
    another device, not a tensor) goes through _words, whose _pack gives the
    same words or the error."""
    ptrs, body = [], []
    for i in keep:
        ty = types[i]
        if ty.startswith("*"):
            ptrs.append(i)
            body.append("a%d.data_ptr()" % i)
        elif ty == "fp32":
            body.append("_f32(args[%d])" % i)
        elif ty in ("fp16", "bf16", "fp64"):
            return lambda args, device: _words(types, names, keep, args, device)
        else:
            # Two's complement in 64 bits, as _signed(_pack(...)) gives it.
            body.append("((int(args[%d]) + 0x8000000000000000) & 0xffffffffffffffff) - 0x8000000000000000" % i)
    src = ["def pack(args, device):", "    try:"]
    src += ["        a%d = args[%d]" % (i, i) for i in ptrs]
    if ptrs:
        src.append("        if %s:" % " or ".join("a%d.get_device() != device" % i for i in ptrs))
        src.append("            raise LookupError")
    src.append("        return [%s]" % ", ".join(body))
    src.append("    except Exception:")
    src.append("        return _words(types, names, keep, args, device)")
    scope = {"_words": _words, "_f32": _f32, "types": types, "names": names, "keep": keep}
    exec("\n".join(src), scope)
    return scope["pack"]


_op = []    # torch.ops.maia.triton_launch, looked up at the first launch


def _launch(binary, key, device, grid, words, budget):
    if not _op:
        import torch
        _op.append(torch.ops.maia.triton_launch)
    _op[0](binary, key, device, grid, words, budget)


def _hooked(hook):
    """Whether a launch hook calls anything: a HookChain without calls does not."""
    return bool(getattr(hook, "calls", True))


class MaiaLauncher:
    """kernel.run(gridX, gridY, gridZ, stream, function, packed_metadata,
    launch_metadata, enter_hook, exit_hook, *args) of Triton's runtime."""

    def __init__(self, src, metadata):
        sig = src.signature
        self.names = list(sig.keys())
        self.types = [sig[n] for n in self.names]
        # Constexprs (and ints Triton specialized to 1) are not in the TTIR signature.
        constants = getattr(src, "constants", {})
        self.keep = []
        for i, (n, t) in enumerate(zip(self.names, self.types)):
            if t == "constexpr" or (i, ) in constants:
                continue
            if isinstance(t, tuple) or str(t).startswith("tensordesc"):
                raise TypeError("maia: argument %s of type %s is not supported" % (n, t))
            self.keep.append(i)
        self.num_args = metadata.num_args
        if len(self.keep) != self.num_args:
            raise RuntimeError("maia: kernel %s takes %d arguments but its signature keeps %d" %
                               (metadata.name, self.num_args, len(self.keep)))
        self.key = metadata.hash
        self.budget = metadata.budget
        self.scratch = metadata.scratch
        self.binary = None
        self.pack = _packer(self.types, self.names, self.keep)

    def __call__(self, gridX, gridY, gridZ, stream, function, packed_metadata, launch_metadata, enter_hook,
                 exit_hook, *args):
        if self.binary is None:
            import torch
            self.binary = torch.frombuffer(bytearray(function.binary), dtype=torch.uint8)
        words = self.pack(args, function.device)
        if self.scratch:
            import torch
            # The spill area: a slot per program instance, freed to the caching allocator
            # after the launch (ops that reuse it run after the kernel on the stream).
            area = torch.empty(self.scratch * gridX * gridY * gridZ, dtype=torch.uint8,
                               device=torch.device("maia", function.device))
            words.append(area.data_ptr())
        # Triton's hooks are HookChains, empty unless a user added one: not called then.
        if enter_hook is not None and _hooked(enter_hook):
            enter_hook(launch_metadata)
        _launch(self.binary, self.key, function.device, [gridX, gridY, gridZ], words, self.budget)
        if exit_hook is not None and _hooked(exit_hook):
            exit_hook(launch_metadata)


    def runner(self, function):
        """A launch of this kernel on function's device as a C function
        (maia._maia_launch.runner: no torch dispatcher, no Python per
        argument) that calls this launcher for whatever it does not take as
        is; this launcher itself when that cannot be (no extension, a
        kernel with a spill area, another argument type)."""
        kinds = []
        for i, ty in enumerate(self.types):
            if i not in self.keep:
                kinds.append("-")
            elif ty.startswith("*"):
                kinds.append("p")
            elif ty == "fp32":
                kinds.append("f")
            elif ty in ("fp16", "bf16", "fp64"):
                return self
            else:
                kinds.append("i")
        try:
            from maia import _maia_launch
        except ImportError:
            return self
        return _maia_launch.runner(self, self.key, bytes(function.binary), function.device, self.budget,
                                   "".join(kinds), self.scratch)


class MaiaFunction:
    """What load_binary returns as the "function": the binary and its device."""

    def __init__(self, binary, device):
        self.binary = binary
        self.device = device


class MaiaUtils:

    @staticmethod
    def load_binary(name, kernel, shared, device):
        # The kernel object is made on the device at its first launch (kernel_launch.cpp).
        # (module, function, n_regs, n_spills, n_max_threads); a module that is not None
        # tells CompiledKernel that it is loaded (it would load it again at every launch).
        function = MaiaFunction(bytes(kernel), device)
        return function, function, 0, 0, 1

    @staticmethod
    def unload_module(module):
        pass

    @staticmethod
    def get_device_properties(device):
        return {"max_shared_mem": 0, "multiprocessor_count": 1, "max_num_regs": 0, "warpSize": 1,
                "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0}


def _benchmarker(kernel_call, quantiles=None, warmup=2, rep=10, **kwargs):
    """Wall-clock time of kernel_call (synchronized), in ms."""
    import torch
    for _ in range(warmup):
        kernel_call()
    torch.maia.synchronize()
    times = []
    for _ in range(rep):
        t0 = time.perf_counter()
        kernel_call()
        torch.maia.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    if quantiles:
        return [times[min(len(times) - 1, int(q * len(times)))] for q in quantiles]
    return sum(times) / len(times)


class MaiaDriver(DriverBase):

    def __init__(self):
        super().__init__()
        self.utils = MaiaUtils()
        self.launcher_cls = MaiaLauncher

    @staticmethod
    def is_active():
        return _maia_torch() is not None

    def map_python_to_cpp_type(self, ty):
        return "uint64_t"

    def get_current_target(self):
        return GPUTarget(TARGET_BACKEND, TARGET_ARCH, 1)

    def get_current_device(self):
        import torch
        return torch.maia.current_device()

    def set_current_device(self, device):
        import torch
        torch.maia.set_device(device)

    def get_current_stream(self, device=None):
        # One in-order stream per device (the backend's job queue).
        return 0

    def get_active_torch_device(self):
        import torch
        return torch.device(TARGET_BACKEND, self.get_current_device())

    def get_device_interface(self):
        import torch
        return torch.maia

    def get_benchmarker(self):
        return _benchmarker

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(1 << 20, dtype=torch.int32, device=self.get_active_torch_device())

    def clear_cache(self, cache):
        cache.zero_()
