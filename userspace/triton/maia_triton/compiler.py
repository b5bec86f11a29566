"""The Maia backend's compiler (Documentation/triton.rst): Triton's own TTIR
passes, then the lowering of TTIR to Tile Vector Processor assembly
(lowering.py), then assembly to instruction words through the maia module."""

import functools
import hashlib
import os
from dataclasses import dataclass
from typing import Any, Dict, Tuple
from types import ModuleType

from triton.backends.compiler import BaseBackend, GPUTarget, Language
from triton._C.libtriton import ir, passes

from . import lowering

# GPUTarget.backend of every Maia device; the arch names the TVP revision.
TARGET_BACKEND = "maia"
TARGET_ARCH = "tvp1.9"


@functools.lru_cache()
def _sources_hash():
    """A hash of this package's sources: part of every compiled kernel's
    cache key, so that a changed backend never reuses an old binary."""
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:32]


@dataclass(frozen=True)
class MaiaOptions:
    # The fields Triton's front end reads from every backend's options.
    num_warps: int = 1
    num_ctas: int = 1
    num_stages: int = 1
    warp_size: int = 1
    enable_fp_fusion: bool = False
    launch_cooperative_grid: bool = False
    launch_pdl: bool = False
    # VLD/VST and VCVT know FP8 E4M3 and E5M2 (maia/hw/tvp.h).
    supported_fp8_dtypes: Tuple[str, ...] = ("fp8e4nv", "fp8e5")
    deprecated_fp8_dot_operand_dtypes: Tuple[str, ...] = ()
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: Tuple[str, ...] = ("ieee", "tf32")
    max_num_imprecise_acc_default: int = 0
    extern_libs: Any = None
    debug: bool = False
    sanitize_overflow: bool = False
    backend_name: str = TARGET_BACKEND
    arch: str = TARGET_ARCH
    instrumentation_mode: str = ""
    fpsan_homomorphic_casts: bool = False
    # Instructions one program instance may run (0: the device's default).
    budget: int = 0

    def hash(self):
        key = "_".join(f"{k}-{v}" for k, v in sorted(self.__dict__.items()))
        return hashlib.sha256(key.encode("utf-8")).hexdigest()


class MaiaBackend(BaseBackend):
    supports_native_tensor_specialization = False

    @staticmethod
    def supports_target(target: GPUTarget):
        return target.backend == TARGET_BACKEND

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        # CompiledKernel reads the binary from the cache file of this suffix.
        self.binary_ext = "tvpbin"

    def hash(self) -> str:
        return f"maia-{self.target.arch}-{_sources_hash()}"

    def parse_options(self, opts) -> Any:
        args = {k: opts[k] for k in MaiaOptions.__dataclass_fields__ if k in opts and opts[k] is not None}
        # One program instance is one TVP thread: warps mean nothing here.
        args["num_warps"] = 1
        args["num_ctas"] = 1
        args["warp_size"] = 1
        args.pop("supported_fp8_dtypes", None)
        args.pop("allowed_dot_input_precisions", None)
        if args.get("extern_libs") is not None:
            args["extern_libs"] = tuple(dict(args["extern_libs"]).items())
        return MaiaOptions(**args)

    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)

    def get_codegen_implementation(self, options):
        return {"min_dot_size": lambda lhs, rhs: (1, 1, 1)}

    def get_module_map(self) -> Dict[str, ModuleType]:
        # libdevice's names (Inductor's kernels call them) as maia functions.
        from . import libdevice
        return {"triton.language.extra.libdevice": libdevice}

    def load_dialects(self, ctx):
        pass

    @staticmethod
    def make_ttir(mod, metadata, options):
        # The TTIR pipeline of the nvidia and amd backends (make_ttir).
        pm = ir.pass_manager(mod.context)
        pm.enable_debug()
        passes.common.add_inliner(pm)
        passes.ttir.add_rewrite_tensor_descriptor_to_pointer(pm)
        passes.common.add_canonicalizer(pm)
        passes.ttir.add_combine(pm)
        passes.ttir.add_reorder_broadcast(pm)
        passes.common.add_cse(pm)
        passes.common.add_symbol_dce(pm)
        passes.ttir.add_loop_unroll(pm)
        pm.run(mod, "make_ttir")
        return mod

    @staticmethod
    def make_tvpasm(mod, metadata, options):
        asm, info = lowering.lower_module(mod.str(), mod.get_entry_func_name())
        metadata["name"] = info.name
        metadata["shared"] = 0
        metadata["num_args"] = info.num_args
        metadata["num_insns"] = info.num_insns
        metadata["scratch"] = info.scratch
        return asm

    @staticmethod
    def make_tvpbin(src, metadata, options):
        import maia
        if not hasattr(maia, "tvp_assemble"):
            raise RuntimeError("maia: this maia module has no tvp_assemble (libmaia 1.9's assembler binding)")
        return bytes(maia.tvp_assemble(src))

    def add_stages(self, stages, options, language):
        if language != Language.TRITON:
            raise RuntimeError("the maia backend compiles Triton kernels only (not Gluon)")
        stages["ttir"] = lambda src, metadata: self.make_ttir(src, metadata, options)
        stages["tvpasm"] = lambda src, metadata: self.make_tvpasm(src, metadata, options)
        stages["tvpbin"] = lambda src, metadata: self.make_tvpbin(src, metadata, options)
