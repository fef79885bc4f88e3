"""Checks a GPU backend's own tests share: lower one kernel and check its sources' shape.

The source-only GPU backends (hip, metal, webgpu) test every kernel of the
repository's kernel suite (``integration_tests/kernels``) the same way:
lower the kernel's first case through the backend's pipeline, emit sources,
and check the files, entry symbol and launch. `GpuSourceSuite` holds that
procedure once; each backend's test module names only what differs (its
target, its source file's extension, what its source text must contain).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import ModuleType

import attrs
from tvm import tirx
from tvm.target import Target

from tl_backend_api.artifact import kernel_module
from tl_backend_api.descriptors import Backend
from tl_backend_api.protocols import KernelSources
from tl_passes.gpu import GpuLoweringError

#: Grid of each suite kernel's first case (``integration_tests/kernels``), worked
#: out from its ``T.Kernel`` by hand; the suite and this table change together
#: (each backend's tests assert the keys equal the suite's names).
SUITE_FIRST_CASE_GRIDS: Mapping[str, tuple[int | str, ...]] = {
    "gemm": (2, 2),
    "gemm_transposed": (2, 2),
    "elementwise_add": (4, 4),
    "softmax": (4,),
    "rms_norm": (4,),
    "column_reduce": (2,),
    "symbolic_scale": ("((M + 31) // 32)",),
    "two_outputs": (2, 2),
    "atomic_sum": (4, 2),
    "serial_scan": (1,),
    "tile_cumsum": (4,),
}

#: Suite kernels whose tiles live in shared memory (their sources need block barriers).
SUITE_SHARED_MEMORY_KERNELS: tuple[str, ...] = (
    "gemm",
    "gemm_transposed",
    "rms_norm",
    "two_outputs",
    "tile_cumsum",
    "softmax",
)

#: Threads per block of every suite kernel's first case.
SUITE_BLOCK: tuple[int, ...] = (128,)


def _kernel_names(names: Iterable[str]) -> frozenset[str]:
    return frozenset(names)


@attrs.frozen
class GpuSourceSuite:
    """How one GPU backend's sources are emitted and checked for a suite kernel.

    Attributes:
        backend: the backend under test.
        kind: the target kind it serves (a key of its pipelines and device codegens).
        make_target: a fresh target of that kind (with its host).
        source_extension: the extension of the backend's main source file
            (``"s"``, ``"metal"``, ``"wgsl"``), without the dot.
        unsupported: suite kernels the target cannot lower (their lowering must
            raise a `GpuLoweringError` naming the target).
    """

    backend: Backend
    kind: str
    make_target: Callable[[], Target]
    source_extension: str
    unsupported: frozenset[str] = attrs.field(default=frozenset(), converter=_kernel_names)

    def emit(self, func: tirx.PrimFunc, name: str) -> KernelSources:
        """Sources of the PrimFunc ``func`` under ``name``: the backend's pipeline,
        then its device codegen's ``emit_source`` (no compiler runs).

        Raises:
            whatever the pipeline or codegen raises (a `GpuLoweringError` for a
            construct the target lacks, a `ToolchainError` when TVM fails).
        """
        target = self.make_target()
        mod = self.backend.pipelines[self.kind].run(kernel_module(func, name), target)
        return self.backend.device_codegens[self.kind].emit_source(mod, target)

    def source_text(self, sources: KernelSources, name: str) -> str:
        """The text of ``<name>.<source_extension>``.

        Raises:
            AssertionError: the sources hold no such file (the files present are named).
        """
        file_name = f"{name}.{self.source_extension}"
        assert file_name in sources.files, (
            f"sources: expected {file_name!r}, got files {sorted(sources.files)}"
        )
        return sources.files[file_name]

    def problems(
        self,
        sources: KernelSources,
        name: str,
        *,
        grid: tuple[int | str, ...],
        block: tuple[int | str, ...] = SUITE_BLOCK,
    ) -> list[str]:
        """What is wrong with the suite kernel ``name``'s sources (empty when nothing).

        Checked: the entry symbol is ``<name>_kernel``; there is exactly one launch,
        of that symbol, with ``grid`` and ``block``; ``<name>.<source_extension>``
        and ``<name>.kernel.json`` are among the files.
        """
        found: list[str] = []
        symbol = f"{name}_kernel"
        if sources.entry_symbol != symbol:
            found.append(f"entry_symbol: expected {symbol!r}, got {sources.entry_symbol!r}")
        for file_name in (f"{name}.{self.source_extension}", f"{name}.kernel.json"):
            if file_name not in sources.files:
                found.append(f"files: expected {file_name!r}, got {sorted(sources.files)}")
        if len(sources.launches) != 1:
            found.append(f"launches: expected one launch, got {len(sources.launches)}")
            return found
        (launch,) = sources.launches
        if launch.kernel_name != symbol:
            found.append(f"launch kernel_name: expected {symbol!r}, got {launch.kernel_name!r}")
        if launch.grid != grid:
            found.append(f"launch grid: expected {grid}, got {launch.grid}")
        if launch.block != block:
            found.append(f"launch block: expected {block}, got {launch.block}")
        return found

    def check_suite_kernel(self, kernel: ModuleType, name: str) -> str | None:
        """Emit the suite kernel module ``kernel`` (its ``KERNEL`` at its first case)
        and check it as `problems` does, with `SUITE_FIRST_CASE_GRIDS` and `SUITE_BLOCK`.

        Returns:
            The text of the main source file, for the backend's own checks; None
            for an `unsupported` kernel once its lowering raised as it must.

        Raises:
            AssertionError: a problem was found, or an unsupported kernel lowered
                (or failed otherwise than with a `GpuLoweringError` naming the target).
        """
        func = kernel.KERNEL(**kernel.CASES[0]["args"])
        if name in self.unsupported:
            try:
                self.emit(func, name)
            except GpuLoweringError as exc:
                expected = f"not implemented on target '{self.kind}'"
                assert expected in str(exc), f"{name}: expected {expected!r}, got {exc}"
                return None
            raise AssertionError(f"{name}: expected a GpuLoweringError on {self.kind!r}")
        sources = self.emit(func, name)
        found = self.problems(sources, name, grid=SUITE_FIRST_CASE_GRIDS[name])
        assert not found, f"{name}: {found}"
        return self.source_text(sources, name)
