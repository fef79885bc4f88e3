"""Checks a GPU backend's own tests share: lower one kernel and check its sources' shape.

The GPU backends test every kernel of the repository's kernel suite
(``integration_tests/kernels``) the same way: lower the kernel's first case
through the backend's pipeline, emit sources, and check the files, entry
symbol and launch. `GpuSourceSuite` holds that procedure once; each backend's
test module names only what differs (its target, its source file's extension,
what its source text must contain).

What is expected of each kernel is the suite's, not this module's: every
kernel module declares it beside its ``T.Kernel`` as ``GPU_SOURCES``
(integration_tests/kernels/README.md); `suite_kernel_expectation` reads it.
The suite is a parameter: any module following that convention can be checked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

import attrs
from tvm import tirx
from tvm.target import Target

from tl_backend_api.artifact import kernel_module
from tl_backend_api.capabilities import (
    MissingCapabilityError,
    kernel_needs,
    missing_capabilities,
)
from tl_backend_api.context import refuse_missing_capabilities
from tl_backend_api.descriptors import Backend
from tl_backend_api.protocols import KernelSources
from tl_passes.gpu import GpuLoweringError

#: The attribute a suite kernel module declares for this suite
#: (integration_tests/kernels/README.md, "Module convention").
EXPECTATION_ATTRIBUTE = "GPU_SOURCES"


@attrs.frozen
class SuiteKernelExpectation:
    """What every GPU target's sources of a suite kernel's first case must show.

    Attributes:
        grid: the one launch's grid (ints, or expressions over symbolic dims as
            strings, e.g. ``"((M + 31) // 32)"``).
        block: the launch's threads per block.
        block_barriers: whether the sources must hold a block barrier (the kernel
            shares tiles between threads through shared memory).
    """

    grid: tuple[int | str, ...]
    block: tuple[int | str, ...]
    block_barriers: bool


def _launch_dims(value: Any) -> bool:
    return (
        isinstance(value, tuple)
        and len(value) > 0
        and all(isinstance(d, (int, str)) and not isinstance(d, bool) for d in value)
    )


def suite_kernel_expectation(kernel: ModuleType, name: str) -> SuiteKernelExpectation:
    """The ``GPU_SOURCES`` the suite kernel module ``kernel`` (named ``name``) declares.

    Raises:
        ValueError: the module declares none, or not a mapping with ``grid`` and
            ``block`` (non-empty tuples of ints or strings) and ``block_barriers``
            (a bool); the message names the kernel, the key and what came.
    """
    declared = getattr(kernel, EXPECTATION_ATTRIBUTE, None)
    where = f"suite kernel {name!r}: {EXPECTATION_ATTRIBUTE}"
    if not isinstance(declared, Mapping):
        raise ValueError(
            f"{where}: expected a dict with 'grid', 'block' and 'block_barriers' "
            f"(integration_tests/kernels/README.md), got {declared!r}"
        )
    keys = {"grid", "block", "block_barriers"}
    if set(declared) != keys:
        raise ValueError(f"{where}: expected the keys {sorted(keys)}, got {sorted(declared)}")
    for key in ("grid", "block"):
        if not _launch_dims(declared[key]):
            raise ValueError(
                f"{where}[{key!r}]: expected a non-empty tuple of ints or strings, "
                f"got {declared[key]!r}"
            )
    if not isinstance(declared["block_barriers"], bool):
        raise ValueError(
            f"{where}['block_barriers']: expected a bool, got {declared['block_barriers']!r}"
        )
    return SuiteKernelExpectation(
        grid=declared["grid"], block=declared["block"], block_barriers=declared["block_barriers"]
    )


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
        """Sources of the PrimFunc ``func`` under ``name``: the capability check, the
        backend's pipeline, then its device codegen's ``emit_source`` (no compiler runs).

        Raises:
            MissingCapabilityError: the kernel needs what the target's device lacks
                (`Backend.capabilities`), before any pass runs.
            whatever the pipeline or codegen raises (a `GpuLoweringError` for a
            construct the target lacks, a `ToolchainError` when TVM fails).
        """
        target = self.make_target()
        mod = kernel_module(func, name)
        refuse_missing_capabilities(self.backend, target, mod)
        mod = self.backend.pipelines[self.kind].run(mod, target)
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
        block: tuple[int | str, ...],
    ) -> list[str]:
        """What is wrong with the suite kernel ``name``'s sources (empty when nothing).

        Checked: the entry symbol is ``<name>_kernel``; there is exactly one launch,
        of that symbol, with ``grid`` and ``block`` and its device arguments;
        ``<name>.<source_extension>`` is among the files.
        """
        found: list[str] = []
        symbol = f"{name}_kernel"
        if sources.entry_symbol != symbol:
            found.append(f"entry_symbol: expected {symbol!r}, got {sources.entry_symbol!r}")
        file_name = f"{name}.{self.source_extension}"
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
        if not launch.arguments:
            found.append("launch arguments: expected the device kernel's parameters, got none")
        return found

    def check_suite_kernel(self, kernel: ModuleType, name: str) -> str | None:
        """Emit the suite kernel module ``kernel`` (its ``KERNEL`` at its first case)
        and check it as `problems` does, against the grid and block the module
        declares (`suite_kernel_expectation`).

        Returns:
            The text of the main source file, for the backend's own checks; None
            for an `unsupported` kernel once its lowering raised as it must, and
            for a kernel the backend's `Capabilities` exclude once it was refused
            with `MissingCapabilityError`.

        Raises:
            AssertionError: a problem was found, an unsupported kernel lowered
                (or failed otherwise than with a `GpuLoweringError` naming the
                target), or an excluded kernel was not refused.
            ValueError: the module declares no valid ``GPU_SOURCES``.
        """
        expectation = suite_kernel_expectation(kernel, name)
        func = kernel.KERNEL(**kernel.CASES[0]["args"])
        capabilities = self.backend.capabilities_for(self.make_target())
        if missing_capabilities(kernel_needs(func), capabilities):
            # The device cannot compute it: the refusal is the expected outcome.
            try:
                self.emit(func, name)
            except MissingCapabilityError:
                return None
            raise AssertionError(f"{name}: expected a MissingCapabilityError on {self.kind!r}")
        if name in self.unsupported:
            try:
                self.emit(func, name)
            except GpuLoweringError as exc:
                expected = f"not implemented on target '{self.kind}'"
                assert expected in str(exc), f"{name}: expected {expected!r}, got {exc}"
                return None
            raise AssertionError(f"{name}: expected a GpuLoweringError on {self.kind!r}")
        sources = self.emit(func, name)
        found = self.problems(sources, name, grid=expectation.grid, block=expectation.block)
        assert not found, f"{name}: {found}"
        return self.source_text(sources, name)
