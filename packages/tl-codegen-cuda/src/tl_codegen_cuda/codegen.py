"""Device codegen for 'cuda': CUDA C through TVM's CUDA codegen, a cubin through nvcc."""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import re
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import tvm
from tvm import IRModule, tirx
from tvm.target import Target

from tl_backend_api import DeviceBuildResult, KernelSources, imported_sources
from tl_backend_api.gpu.sources import emit_single_source, module_kernel_name

from .device_assert import CUDA_DEVICE_ASSERT, CUDA_DEVICE_ASSERT_PRELUDE
from .features import DEFAULT_ARCH, target_arch
from .toolchain import Nvcc
from .traits import CUDA_NAMED_BARRIER, CUDA_NAMED_BARRIER_PRELUDE, CUDA_TRAITS

_PRELUDE_ANCHOR = 'extern "C" __global__'

#: The host target the kernels' host side is built for when the target names none
#: (TVM's LLVM CPU codegen; the launch itself runs through the runtime's adapter).
HOST_TARGET = "llvm"


#: The header of tensor-core, ldmatrix and cp.async helpers (a package resource).
TENSOR_CORE_HEADER = "tl_tensor_core.h"
_TENSOR_CORE_CALL = re.compile(r"\btl_(mma|ldmatrix|cp_async)_")
_LAUNCH_BOUNDS = re.compile(r"__launch_bounds__\((\d+)\)")


@functools.cache
def tensor_core_header() -> str:
    """The text of `TENSOR_CORE_HEADER`: one plain function per ``mma.sync``,
    ``ldmatrix`` and ``cp.async`` form the lowering calls (device ``asm`` under
    ``__CUDA_ARCH__``; the tests' CPU emulation defines its own under
    ``TL_CUDA_EMULATION``)."""
    return (importlib.resources.files(__package__) / "include" / TENSOR_CORE_HEADER).read_text()


def _named_barrier_call(call: Any) -> Any:
    """TVM's intrinsic lowering of ``tvm_storage_sync`` on cuda: a named barrier (the
    three-argument form ``T.sync_threads(id, count)`` builds) becomes the prelude's
    ``bar.sync`` helper; the whole block's barrier is left to TVM (``__syncthreads()``).
    It runs after TVM's own barrier planning, which saw the named barrier as one."""
    if len(call.args) != 3:
        return call
    return tirx.call_extern("void", CUDA_NAMED_BARRIER, call.args[1], call.args[2])


def _register_named_barrier_lowering() -> None:
    op = tvm.ir.Op.get(_STORAGE_SYNC)
    if op.get_attr("cuda.FLowerIntrinsic") is None:
        tirx.op.register_intrin_lowering(_STORAGE_SYNC, "cuda", f=_named_barrier_call, level=10)


_STORAGE_SYNC = "tirx.tvm_storage_sync"
_register_named_barrier_lowering()

#: TVM's pass option that leaves shared memory reuse to ``MergeSharedMemoryAllocations``
#: (``StorageRewrite`` then reuses no shared allocation of its own).
SHARED_MEMORY_BY_MERGE = "tirx.merge_static_smem"


@contextlib.contextmanager
def shared_memory_planned_by_merge() -> Iterator[None]:
    """The current TVM pass context with `SHARED_MEMORY_BY_MERGE` on (a value the caller
    set, ``pass_configs={"tirx.merge_static_smem": ...}``, is kept).

    Why: TVM's ``StorageRewrite`` otherwise gives a shared tile the memory of a dead
    tile of another dtype (a float16 tile in a float32 one's place) and rewrites the
    tile's access pointers (the ``ldmatrix`` row addresses) onto the float32 allocation;
    ``MergeSharedMemoryAllocations`` then ties them to that float32 tile, and
    ``LowerIntrin`` refuses an access pointer whose element type is not its buffer's
    (``tvm_access_ptr element type must match the source buffer``). The merge plans
    the reuse of dynamic shared memory itself, with one typed view per tile, so
    nothing is lost; it also merges the static ``shared`` arrays, as TileLang does by
    default."""
    current = tvm.transform.PassContext.current()
    config = dict(current.config)
    if SHARED_MEMORY_BY_MERGE in config:
        yield
        return
    config[SHARED_MEMORY_BY_MERGE] = True
    with tvm.transform.PassContext(
        opt_level=current.opt_level,
        required_pass=list(current.required_pass),
        disabled_pass=list(current.disabled_pass),
        instruments=list(current.instruments),
        config=config,
    ):
        yield


def with_prelude(source: str, imported: Sequence[str] = ()) -> str:
    """``source`` with the device helpers the cuda traits' atomics need
    (`CUDA_TRAITS.atomics_prelude`) and then the ``imported`` device source texts
    (``T.import_source``, in order) placed before the first kernel, and the
    tensor-core header (`tensor_core_header`) when the source calls one of its
    helpers (then each kernel's ``__launch_bounds__(T)`` becomes
    ``__launch_bounds__(T, 1)``, so ptxas may give the accumulators the registers
    they need), and the named-barrier helper (`CUDA_NAMED_BARRIER_PRELUDE`) and the
    device-assert helper (`CUDA_DEVICE_ASSERT_PRELUDE`) when the source calls them. The artifact's ``.cu`` stays self-contained (NVRTC compiles it alone)."""
    prelude = CUDA_TRAITS.atomics_prelude
    if f"{CUDA_NAMED_BARRIER}(" in source:
        prelude += CUDA_NAMED_BARRIER_PRELUDE
    if f"{CUDA_DEVICE_ASSERT}(" in source:
        prelude += CUDA_DEVICE_ASSERT_PRELUDE
    prelude += "".join(f"\n{text}\n" for text in imported)
    if _TENSOR_CORE_CALL.search(source):
        prelude = tensor_core_header() + prelude
        # One resident block per SM is enough for tensor-core kernels: without the
        # minimum, ptxas aims at several blocks per SM and spills accumulators.
        source = _LAUNCH_BOUNDS.sub(r"__launch_bounds__(\1, 1)", source)
    position = source.find(_PRELUDE_ANCHOR)
    if position < 0:
        return source + prelude
    return source[:position] + prelude + "\n" + source[position:]


class CudaDeviceCodegen:
    """The `tl_backend_api.DeviceCodegen` of the cuda backend.

    Args:
        nvcc: the toolchain ``build`` compiles with.
    """

    def __init__(self, nvcc: Nvcc | None = None) -> None:
        self.nvcc = nvcc or Nvcc()

    def emit_source(self, mod: IRModule, target: Target) -> KernelSources:
        """CUDA C for ``mod`` (after the cuda pipeline); never runs nvcc. Device source
        the kernel imports (``T.import_source``) comes before the kernels.

        Files: ``<name>.cu`` (the source); the launches (symbol, device
        arguments, grid, block, shared memory of every device kernel) are
        `KernelSources.launches`, which the artifact's manifest records.

        Raises:
            ValueError: ``mod`` holds no kernel.
            ToolchainError: TVM's code generation failed (its message).
        """
        imported = imported_sources(mod)
        with shared_memory_planned_by_merge():
            return emit_single_source(
                mod,
                target,
                language="cuda",
                extension="cu",
                host=HOST_TARGET,
                transform=lambda source: with_prelude(source, imported),
            )

    def build(self, mod: IRModule, target: Target) -> DeviceBuildResult:
        """CUDA C compiled by nvcc to a cubin for the target's arch (``-arch=sm_XX``);
        when the target names no arch nvcc supports (TVM's ``sm_50`` fallback on a
        machine without a GPU), a fatbin with `DEFAULT_ARCH` SASS and PTX instead.

        Raises:
            ToolchainError: code generation failed, nvcc is missing or failed
                (nvcc's message and the source path).
        """
        sources = self.emit_source(mod, target)
        name = module_kernel_name(mod)
        arch = target_arch(target)
        info = self.nvcc.discover()
        with tempfile.TemporaryDirectory(prefix="tl-cuda-") as scratch:
            source_path = Path(scratch) / f"{name}.cu"
            source_path.write_text(sources.files[f"{name}.cu"])
            if arch is not None:
                image = Path(scratch) / f"{name}.cubin"
                self.nvcc.compile_cubin(source_path, image, arch)
            else:
                image = Path(scratch) / f"{name}.fatbin"
                self.nvcc.compile_fatbin(source_path, image, DEFAULT_ARCH)
            blob = image.read_bytes()
        versions = {"nvcc": info.version} if info is not None else {}
        return DeviceBuildResult(
            sources=sources, binaries={image.name: blob}, toolchain_versions=versions
        )
