"""A small stand-in compiler for tl_jit's unit tests: plain TIR kernels built by tvm for ``llvm``.

`install()` registers a backend for kind ``llvm`` (override) and swaps
``tl_jit.compiler._artifact_builder`` for `build_plain_tir_artifact`, which
compiles a plain TIR PrimFunc (no tile ops) with ``tvm.compile`` and writes a
tl-runtime artifact. It exercises everything of tl_jit except the real
tile-op lowering, so these tests run without the CPU backend. Subprocess
tests call `install()` at the top of their script.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tvm
from tvm.script import tirx as T

import tl_runtime

BUILD_COUNT_ENV = "TLJIT_FAKE_BUILD_LOG"


@T.prim_func
def vadd(
    A: T.Buffer((1024,), "float32"),
    B: T.Buffer((1024,), "float32"),
    C: T.Buffer((1024,), "float32"),
):
    T.func_attr({"tir.noalias": True, "global_symbol": "vadd"})
    for i in range(1024):
        C[i] = A[i] + B[i]


def make_scale(n: int, factor: float, repeat: int = 1) -> Any:
    """``B = A * factor`` over n elements, computed ``repeat`` times (work grows with it)."""

    @T.prim_func
    def scale(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        T.func_attr({"tir.noalias": True, "global_symbol": "scale"})
        for i in range(n):
            B[i] = T.float32(-3.0e38)
        # Every round reads the previous one's result, so no compiler can drop rounds.
        for _round in range(repeat):
            for i in range(n):
                B[i] = T.max(B[i], A[i] * T.float32(factor))

    return scale


WILD_OFFSET = 1 << 45
"""How far `make_wild_read` reads past its input, in elements (128 TiB of float32: no
process has it mapped)."""


def make_wild_read(n: int) -> Any:
    """``B = A`` read through an unchecked index `WILD_OFFSET` elements past ``A``: a kernel
    that builds and crashes (SIGSEGV) when run."""

    @T.prim_func
    def wild_read(A: T.Buffer((n,), "float32"), B: T.Buffer((n,), "float32")):
        T.func_attr({"tir.noalias": True, "global_symbol": "wild_read"})
        for i in range(n):
            B[i] = A[T.Cast("int64", i) + T.int64(WILD_OFFSET)]

    return wild_read


@T.prim_func
def vadd_n(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"tir.noalias": True, "global_symbol": "vadd_n"})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] + B[i]


def _params(func: Any, out_idx: Sequence[int] | None) -> list[tl_runtime.ParamSpec]:
    count = len(func.params)
    outputs = {i + count if i < 0 else i for i in (out_idx or ())}
    specs = []
    for index, var in enumerate(func.params):
        ty = var.ty
        if not isinstance(ty, tvm.tirx.BufferType):
            specs.append(tl_runtime.ParamSpec(name=var.name, dtype=str(ty.dtype), kind="scalar"))
            continue
        shape: list[int | str] = []
        for dim in ty.shape:
            shape.append(str(dim) if isinstance(dim, tvm.ir.Var) else int(dim))
        specs.append(
            tl_runtime.ParamSpec(
                name=var.name,
                dtype=str(ty.dtype),
                shape=tuple(shape),
                role="output" if index in outputs else "input",
            )
        )
    return specs


def build_plain_tir_artifact(
    context: Any,
    func: Any,
    directory: str | os.PathLike[str],
    *,
    out_idx: Sequence[int] | None = None,
    extra_versions: Mapping[str, str] | None = None,
    **_: Any,
) -> Path:
    """Compile a plain TIR PrimFunc for llvm and write a tl-runtime artifact into ``directory``."""
    log = os.environ.get(BUILD_COUNT_ENV)
    if log:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=False)
    name = str(func.attrs["global_symbol"])
    if name == "fail":
        raise RuntimeError("this kernel is built to fail")
    library = tvm.compile(func, target="llvm")
    library.export_library(str(root / f"{name}.so"))
    (root / f"{name}.tir").write_text(func.script())
    manifest = tl_runtime.Manifest(
        name=name,
        entry_symbol=name,
        params=tuple(_params(func, out_idx)),
        out_idx=tuple(out_idx or ()),
        target={"kind": "llvm"},
        execution_backend=context.execution_backend.name,
        adapter=context.adapter,
        library=f"{name}.so",
        versions={"apache-tvm": str(tvm.__version__), **dict(extra_versions or {})},
    )
    return tl_runtime.write_artifact(
        root, manifest, [f"{name}.so", f"{name}.tir"], roles={f"{name}.tir": "source"}
    )


class _Codegen:
    def emit_source(self, mod: Any, target: Any) -> Any:
        from tl_backend_api import KernelSources

        return KernelSources(language="tir", files={"k.tir": mod.script()}, entry_symbol="k")

    def build(self, mod: Any, target: Any) -> Any:
        raise NotImplementedError("the fake backend builds through build_plain_tir_artifact")


def lower_to_sources(context: Any, func: Any, **_: Any) -> Any:
    """The fake `tl_backend_api.lower_to_sources`: the TIR text as the source."""
    from tl_backend_api import KernelSources

    return KernelSources(language="tir", files={"kernel.tir": func.script()}, entry_symbol="kernel")


def fake_backend() -> Any:
    """The fake backend descriptor (kind ``llvm``, execution backends tvm_ffi and cython)."""
    from tl_backend_api import Backend, ExecutionBackendSpec, pipeline_from_passes
    from tl_passes import RemoveNoOpPass

    return Backend(
        name="fake-llvm",
        target_kinds=("llvm",),
        pipelines={"llvm": pipeline_from_passes("fake-pipeline", [RemoveNoOpPass()])},
        device_codegens={"llvm": _Codegen()},
        execution_backends=(
            ExecutionBackendSpec("tvm_ffi", enable_device_compile=True),
            ExecutionBackendSpec("cython", enable_device_compile=True),
        ),
    )


def install() -> None:
    """Register the fake backend (override) and make tl_jit build with it."""
    import tl_jit.compiler
    from tl_backend_api.registry import register_backend

    register_backend(fake_backend(), override=True)
    tl_jit.compiler._artifact_builder = lambda: build_plain_tir_artifact  # type: ignore[assignment]
