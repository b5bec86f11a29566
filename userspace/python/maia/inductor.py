# SPDX-License-Identifier: MIT
"""maia.inductor: torch.compile's default backend (Inductor) for maia tensors
(Documentation/python.rst, "torch.compile").

register() tells Inductor that "maia" (torch's PrivateUse1 device, named by
maia.torch) is a Triton device: a DeviceInterface (current device, device
count, the one stream per device, synchronize, the properties Inductor's
Triton heuristics read), Inductor's Triton scheduling less what the maia
backend cannot lower (MaiaScheduling) and its Python wrapper codegen
(MaiaWrapperCodegen), the few lines of wrapper code that name the device's
runtime, the seeds of Inductor's random numbers from the host
(random_seeds), and a plugin that gives each kernel one config whose
tensors fit a vector register. Inductor
then generates Triton kernels for maia tensors; the maia Triton backend
(userspace/triton/maia_triton) compiles them to TVP programs and its driver
launches each as a KERNEL command on the device's stream. maia.torch calls
register() when Inductor first asks torch.maia for its Scheduling.
"""
import copy

import torch

import maia.torch as _mt

BACKEND = _mt.BACKEND


def get_raw_stream(device_index):
    """The stream handle Inductor passes to every launch: one in-order stream
    per device, so 0 (the driver ignores it)."""
    return 0


class _Properties:
    """What Inductor reads of a device's properties (DeviceProperties.create):
    a program instance is one TVP thread, hence a warp of 1."""

    def __init__(self, index):
        self.index = index
        self.name = "maia"
        self.type = BACKEND
        self.multi_processor_count = 1
        self.warp_size = 1
        self.max_threads_per_block = 1
        self.max_threads_per_multi_processor = 1
        self.regs_per_multiprocessor = 0
        self.major = 1
        self.total_memory = 0


def _index(device):
    if device is None:
        return _mt.ops.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return _mt.ops.current_device() if device.index is None else device.index


def _interface():
    from torch._dynamo.device_interface import DeviceInterface

    class MaiaInterface(DeviceInterface):
        """torch._dynamo's device interface for maia (what Inductor's runtime
        and its wrapper code call)."""

        device = torch.maia.device
        Event = torch.Event
        Stream = torch.Stream

        class Worker:
            @staticmethod
            def set_device(device):
                torch.maia.set_device(device)

            @staticmethod
            def current_device():
                return torch.maia.current_device()

            @staticmethod
            def get_device_properties(device=None):
                return _Properties(_index(device))

        @staticmethod
        def current_device():
            return torch.maia.current_device()

        @staticmethod
        def set_device(device):
            torch.maia.set_device(device)

        @staticmethod
        def exchange_device(device):
            prev = torch.maia.current_device()
            if device >= 0 and device != prev:
                torch.maia.set_device(device)
            return prev

        @staticmethod
        def maybe_exchange_device(device):
            return MaiaInterface.exchange_device(device)

        @staticmethod
        def device_count():
            return torch.maia.device_count()

        @staticmethod
        def is_available():
            return torch.maia.is_available()

        @staticmethod
        def current_stream():
            return torch.maia.current_stream()

        @staticmethod
        def stream(stream):
            import contextlib
            return contextlib.nullcontext()

        @staticmethod
        def set_stream(stream):
            pass

        @staticmethod
        def _set_stream_by_id(stream_id, device_index, device_type):
            pass

        @staticmethod
        def get_raw_stream(device_idx):
            return get_raw_stream(device_idx)

        @staticmethod
        def synchronize(device=None):
            torch.maia.synchronize(device)

        @classmethod
        def get_device_properties(cls, device=None):
            return _Properties(_index(device))

        @staticmethod
        def get_compute_capability(device=None):
            # Inductor's GPUTarget arch: the Triton backend's own (triton first:
            # it discovers its backends on import).
            import triton  # noqa: F401
            from maia_triton.compiler import TARGET_ARCH
            return TARGET_ARCH

        @staticmethod
        def is_bf16_supported(including_emulation=False):
            return True

        @staticmethod
        def memory_allocated(device=None):
            return _mt.memory_stats()["in_use_bytes"]

        @staticmethod
        def is_triton_capable(device=None):
            return True

        @staticmethod
        def raise_if_triton_unavailable(device=None):
            import triton.backends
            if BACKEND not in triton.backends.backends:
                raise RuntimeError("maia: Triton does not see the maia backend (maia_triton on sys.path?)")

    return MaiaInterface


# Whether a compiled graph's device work goes as one job per device
# (batched_call); False: a job per kernel launch and per op, as in eager mode.
batch_launches = True
# Inside a batched call, a Triton launch submits the batch so far once this
# many launches went since the last such submission and the device is done
# with that part (torch.ops.maia.flush_launches); 0: the batch goes when the
# call returns.
flush_launches = 2


def batched_call(call, devices):
    """call, the entry of Inductor's generated module for a graph on the
    maia devices devices, with every kernel launch and op of one call (while
    batch_launches is on) appended to one command buffer per device and
    submitted as one job when the call returns (maia.torch.batched():
    earlier before a host read, a synchronize, an event or at 128 KiB), or
    in a few parts: with flush_launches, a launch submits the part so far
    when the device is idle, which then runs while the host writes the rest.
    A job per launch cost the guest more than the launch: submission, the
    worker's wake-up, a completion interrupt; one job for the whole call
    left the device idle until the call returned
    (Documentation/benchmarks.rst, "torch.compile with Inductor")."""
    begin, end, flush = _mt.ops.batch_begin, _mt.ops.batch_end, _mt.ops.flush_launches

    def run(args):
        if not batch_launches:
            return call(args)
        early = flush_launches
        for d in devices:
            begin(d)
        if early:
            flush(early)
        try:
            return call(args)
        finally:
            if early:
                flush(0)
            for d in devices:
                end(d)
    return run


def _op_overrides():
    from torch._inductor.codegen.common import DeviceOpOverrides

    class MaiaDeviceOpOverrides(DeviceOpOverrides):
        """The lines Inductor's Python wrapper writes for the device."""

        def import_get_raw_stream_as(self, name):
            return "from maia.inductor import get_raw_stream as %s" % name

        def set_device(self, device_idx):
            return "torch.maia.set_device(%d)" % device_idx

        def synchronize(self):
            return "torch.maia.synchronize()"

        def device_guard(self, device_idx):
            return "torch.maia.device(%d)" % device_idx

        def current_stream(self):
            return "torch.maia.current_stream()"

    return MaiaDeviceOpOverrides()


# The lanes of a TVP vector register: a Triton tensor of the maia backend fits in one.
MAX_BLOCK_ELEMS = 1024


def _block_elems(cfg, fixed=1):
    """Elements of a kernel's largest tensor under cfg: the product of its
    *BLOCK values times fixed (the blocks the kernel fixes itself)."""
    n = fixed
    for k, v in cfg.kwargs.items():
        if k.endswith("BLOCK") and isinstance(v, int):
            n *= v
    return n


def _fixed_elems(autotuner, kind):
    """A persistent reduction fixes its R0_BLOCK (R1_BLOCK) in its body to
    its whole row, the power of two in Inductor's size hints; other kernels
    take every block from the config."""
    if kind != "PERSISTENT_REDUCTION":
        return 1
    n = 1
    for k, v in (getattr(autotuner, "size_hints", None) or {}).items():
        if k.startswith("r"):
            n *= v
    return n


def _shrunk(cfg, kind, fixed):
    """cfg with its blocks halved until they fit a vector register (the
    x/y blocks first, then a looped reduction's R0_BLOCK, which is only the
    loop's step); None when that cannot be: a persistent reduction's row
    (fixed) is whole, and other kinds of kernel (templates, user kernels)
    keep their blocks. kind: Inductor's HeuristicType name."""
    if kind not in ("POINTWISE", "REDUCTION", "PERSISTENT_REDUCTION"):
        return None
    cfg = copy.deepcopy(cfg)
    kw = cfg.kwargs
    order = sorted((k for k in kw if k.endswith("BLOCK") and isinstance(kw[k], int)),
                   key=lambda k: (k.startswith("R"), -kw[k]))
    for k in order:
        if kind == "PERSISTENT_REDUCTION" and k.startswith("R"):
            break
        while _block_elems(cfg, fixed) > MAX_BLOCK_ELEMS and kw[k] > 1:
            kw[k] //= 2
    return cfg if _block_elems(cfg, fixed) <= MAX_BLOCK_ELEMS else None


def _pick_config(autotuner):
    """Of the configs Inductor's heuristics proposed for a kernel, each
    shrunk to fit a vector register where it does not, the one with the
    largest block (ties: the first): one compile per kernel and no
    autotuning by timing. None fitting (a persistent reduction over more
    than 1024 elements) is an error naming the kernel."""
    configs = autotuner.configs or []
    if not configs:
        return
    kind = getattr(autotuner.heuristic_type, "name", "")
    fixed = _fixed_elems(autotuner, kind)
    fits = [c if _block_elems(c, fixed) <= MAX_BLOCK_ELEMS else _shrunk(c, kind, fixed) for c in configs]
    fits = [c for c in fits if c is not None]
    if not fits:
        name = autotuner.inductor_meta.get("kernel_name", autotuner.fn.__name__)
        raise RuntimeError(
            "maia: Inductor kernel %s (%s): its block (%s%s) has more than the %d elements of a TVP vector "
            "register and cannot be made smaller" % (
                name, kind.lower(), ", ".join("%s=%d" % kv for kv in sorted(configs[0].kwargs.items())),
                ", a row of %d" % fixed if fixed > 1 else "", MAX_BLOCK_ELEMS))
    best = max(_block_elems(c, fixed) for c in fits)
    autotuner.configs = [next(c for c in fits if _block_elems(c, fixed) == best)]


def _plugins():
    """Inductor's CachingAutotuner asks get_caching_autotuner_plugins() for
    its plugins; a maia kernel's gets one that picks its config before the
    compile (pre_compile)."""
    from torch._inductor.runtime import triton_heuristics as th

    class MaiaConfigPlugin(th.CachingAutotunerPlugin):
        def pre_compile(self, autotuner):
            _pick_config(autotuner)
            return th.DEFER

    inner = th.get_caching_autotuner_plugins

    def plugins(autotuner):
        found = inner(autotuner)
        if autotuner.device_props.type == BACKEND:
            found.append(MaiaConfigPlugin())
        return found

    th.get_caching_autotuner_plugins = plugins


# Whether a maia graph's wrapper asserts its inputs' sizes and strides
# (Inductor's size_asserts) on every call; off: Dynamo's guards check them
# before the call (read when a graph is compiled).
input_asserts = False

# Whether Inductor's launchers call a maia kernel through its C runner
# (maia_triton.driver.MaiaLauncher.runner) instead of the Python launcher
# and torch.ops.maia.triton_launch; read when a launcher is made.
fast_launch = True


def _launchers_without_hooks():
    """Inductor writes each kernel's launcher once (TritonCompileResult.
    make_launcher) and evaluates the kernel's launch_metadata at every
    launch when Triton's launch_enter_hook is set, "None" burned in when it
    is not. Triton 3.x's hooks are HookChains, set even when empty: a maia
    kernel's launcher is made with none while no hook is in them (a LazyDict
    and two empty chains less per launch); a hook added later applies to
    launchers made after it, as with Inductor's own None. Such a launcher
    calls the kernel's C runner (fast_launch)."""
    from torch._inductor.runtime.triton_heuristics import TritonCompileResult
    from triton import knobs

    make = TritonCompileResult.make_launcher

    def make_launcher(self):
        rt = knobs.runtime
        enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
        if (self.compile_meta.get("device_type") != BACKEND or getattr(enter, "calls", True)
                or getattr(leave, "calls", True)):
            return make(self)
        rt.launch_enter_hook = rt.launch_exit_hook = None
        try:
            launcher = make(self)
        finally:
            rt.launch_enter_hook, rt.launch_exit_hook = enter, leave
        scope = launcher.__globals__
        run, function = scope.get("runner"), scope.get("function")
        if fast_launch and hasattr(run, "runner") and function is not None:
            scope["runner"] = run.runner(function)
        return launcher

    TritonCompileResult.make_launcher = make_launcher


def random_seeds(low, high, size, out):
    """Inductor's seeds for its Triton random numbers (dropout, rand), one
    int64 per random op of a graph: aten.randint on a CUDA device's
    generator. The maia backend has no randint kernel; rather than a CPU
    fallback (an error in strict mode), they are drawn from the CPU
    generator (seeded by torch.manual_seed) and uploaded, one copy."""
    return out.copy_(torch.randint(low, high, size, dtype=out.dtype))


def _seeds_from_host():
    """Inductor's RandomSeeds node calls random_seeds for a maia device."""
    from torch._inductor import ir

    init = ir.RandomSeeds.__init__

    def __init__(self, count, device):
        init(self, count, device)
        if device.type == BACKEND:
            self.python_kernel_name = "maia_random_seeds"

    ir.RandomSeeds.__init__ = __init__


def _wrapper():
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    class MaiaWrapperCodegen(PythonWrapperCodegen):
        """Inductor's Python wrapper, importing random_seeds (the name
        RandomSeeds writes for a maia device), its call batched
        (batched_call)."""

        @staticmethod
        def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
            if is_subgraph:
                return PythonWrapperCodegen.create(is_subgraph, subgraph_name, parent_wrapper,
                                                   partition_signatures)
            return MaiaWrapperCodegen()

        def write_header(self):
            super().write_header()
            self.imports.writeline("from maia.inductor import random_seeds as maia_random_seeds")
            self.imports.writeline("from maia.inductor import batched_call as maia_batched_call")
            self.imports.writeline("from maia._maia_launch import empty_strided as empty_strided_maia")

        def codegen_input_size_asserts(self):
            # Dynamo's guards have checked each input's sizes and strides
            # before the call (input_asserts).
            if input_asserts:
                super().codegen_input_size_asserts()

        def make_allocation(self, name, device, dtype, shape, stride, allocation_shape=None, is_pinned=False):
            # A maia buffer from maia._maia_launch.empty_strided, as CUDA's
            # from empty_strided_cuda: not torch.empty_strided's argument parser.
            line = super().make_allocation(name, device, dtype, shape, stride, allocation_shape, is_pinned)
            head, dev = "%s = empty_strided(" % name, ", device='%s', dtype=" % BACKEND
            if device.type == BACKEND and line.startswith(head) and dev in line:
                line = "%s = empty_strided_maia(%s" % (name, line[len(head):].replace(dev, ", ", 1))
            return line

        def generate_after_suffix(self, result):
            # After it the module's call (a function, or Runner.call with
            # graph partitions) is defined: wrapped to batch a call's jobs.
            super().generate_after_suffix(result)
            from torch._inductor.virtualized import V
            devices = sorted(i for i in V.graph.device_idxs if i is not None)
            if BACKEND in V.graph.device_types and devices:
                result.writeline("call = maia_batched_call(call, %r)" % (devices, ))

    return MaiaWrapperCodegen


def _scheduling():
    from torch._inductor.codegen.common import BackendFeature
    from torch._inductor.codegen.triton import TritonScheduling

    class MaiaScheduling(TritonScheduling):
        """Inductor's Triton scheduling less what the maia Triton backend
        cannot lower: sorts, for which Inductor then calls the aten op (the
        maia backend's kernel or its CPU fallback); and Triton templates
        (max-autotune's matmul blocks, larger than a vector register)."""

        backend_features = TritonScheduling.backend_features - {
            BackendFeature.SORT, BackendFeature.TRITON_TEMPLATES}

    return MaiaScheduling


_registered = False
Scheduling = None          # MaiaScheduling, made by register()
WrapperCodegen = None      # MaiaWrapperCodegen, made by register()


def register():
    """Make "maia" an Inductor Triton device (idempotent)."""
    global _registered
    if _registered:
        return
    from torch._dynamo.device_interface import register_interface_for_device
    from torch._inductor.codegen.common import register_backend_for_device, register_device_op_overrides

    global Scheduling, WrapperCodegen
    Scheduling = _scheduling()
    WrapperCodegen = _wrapper()
    iface = _interface()
    register_interface_for_device(BACKEND, iface)
    for i in range(max(1, torch.maia.device_count())):
        register_interface_for_device("%s:%d" % (BACKEND, i), iface)
    register_backend_for_device(BACKEND, Scheduling, WrapperCodegen)
    register_device_op_overrides(BACKEND, _op_overrides())
    _plugins()
    _launchers_without_hooks()
    _seeds_from_host()
    # Compile Triton kernels in this process: a worker would import torch
    # again (40 s and more in a TCG guest) and has no device.
    torch._inductor.config.compile_threads = 1
    _registered = True


def register_for_inductor(name):
    """torch.maia's Scheduling, PythonWrapperCodegen and CppWrapperCodegen,
    which Inductor's init_backend_registration() reads for a PrivateUse1
    device: register() first; no C++ wrapper (None: Inductor keeps what
    register() set)."""
    register()
    return {"Scheduling": Scheduling, "PythonWrapperCodegen": WrapperCodegen}.get(name)
