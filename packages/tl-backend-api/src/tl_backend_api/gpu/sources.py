"""Shared pieces of the GPU device codegens (cuda, hip, metal, webgpu).

Every GPU backend lowers with `tl_backend_api.gpu.build.build_device_module`
and answers `DeviceCodegen.emit_source` with the same shape of
`KernelSources`: its own source file(s) named ``<name>.<ext>`` and one
`KernelLaunch` per device kernel (symbol, device arguments in order, grid,
block, dynamic shared memory), which `build_artifact` writes to the manifest's
``launches``, the one description a launcher reads. The helpers here build
that shape once; each backend keeps only what differs (its language, file
extensions, source post-processing, toolchain).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping

from tvm import IRModule
from tvm.target import Target

from tl_backend_api.errors import ToolchainError
from tl_backend_api.gpu.build import DeviceBuildError, DeviceModule, build_device_module
from tl_backend_api.protocols import KernelArgument, KernelLaunch, KernelSources, ToolchainInfo

#: Seconds a ``<tool> --version`` probe may take before the tool counts as absent.
VERSION_PROBE_TIMEOUT_S = 60


def module_kernel_name(mod: IRModule) -> str:
    """The name of the module's kernel: its first function's ``global_symbol``,
    else that function's global name.

    Args:
        mod: the module after the backend's pipeline.

    Raises:
        ValueError: ``mod`` holds no function.
    """
    for global_var, func in mod.functions.items():
        symbol = func.attrs.get("global_symbol") if func.attrs is not None else None
        return str(symbol) if symbol is not None else str(global_var.name_hint)
    raise ValueError("mod: expected a module with one kernel, got an empty module")


def build_device_sources(
    mod: IRModule,
    target: Target,
    *,
    host: Target | str | None = None,
    source_formats: tuple[str, ...] = ("",),
) -> DeviceModule:
    """`build_device_module` with its failure reported as a `ToolchainError`.

    Args:
        mod: the module after the backend's ``gpu-*`` pipeline.
        target: the GPU target.
        host: the host target the backend builds for, when ``target`` has none.
        source_formats: the formats to read from TVM's device module
            (``""`` the primary source; ``"asm"`` on ROCm).

    Raises:
        ToolchainError: TVM's lowering or code generation failed (its message;
            the `DeviceBuildError` is the cause).
    """
    try:
        return build_device_module(mod, target, host=host, source_formats=source_formats)
    except DeviceBuildError as exc:
        raise ToolchainError(str(exc)) from exc


def kernel_launches(device: DeviceModule) -> tuple[KernelLaunch, ...]:
    """One `KernelLaunch` per device kernel, in launch order: its symbol, device
    arguments, grid, block and dynamic shared memory (ints or expressions over
    symbolic dims)."""
    return tuple(
        KernelLaunch(
            kernel_name=kernel.symbol,
            grid=kernel.grid,
            block=kernel.block,
            dynamic_shared_memory_bytes=kernel.dynamic_shared_memory,
            arguments=tuple(
                KernelArgument(argument.kind, argument.name, argument.dtype, argument.nbytes)
                for argument in kernel.arguments
            ),
        )
        for kernel in device.kernels
    )


def device_kernel_sources(
    device: DeviceModule, *, language: str, files: Mapping[str, str]
) -> KernelSources:
    """The `KernelSources` of a built device module.

    Args:
        device: the built device module (at least one kernel).
        language: the `KernelSources.language` (``"cuda"``, ``"metal"``...).
        files: the backend's own source files, in the order they are listed.

    Returns:
        Sources holding ``files``, whose entry symbol is the first kernel's and whose
        launches are `kernel_launches` of ``device``.
    """
    return KernelSources(
        language=language,
        files=files,
        entry_symbol=device.kernels[0].symbol,
        launches=kernel_launches(device),
    )


def emit_single_source(
    mod: IRModule,
    target: Target,
    *,
    language: str,
    extension: str,
    host: Target | str | None = None,
    transform: Callable[[str], str] | None = None,
) -> KernelSources:
    """Sources for a backend whose device code is one text file: ``<name>.<extension>``
    (TVM's primary source, passed through ``transform`` when given), with its launches.
    Runs no compiler.

    Args:
        mod: the module after the backend's pipeline.
        target: the GPU target.
        language: the `KernelSources.language`.
        extension: the source file's extension, without the dot (``"cu"``).
        host: the host target the backend builds for, when ``target`` has none.
        transform: rewrites the source text (the cuda backend adds its prelude).

    Raises:
        ValueError: ``mod`` holds no function (checked before any lowering).
        ToolchainError: TVM's code generation failed (its message).
    """
    name = module_kernel_name(mod)
    device = build_device_sources(mod, target, host=host)
    source = device.sources[""]
    if transform is not None:
        source = transform(source)
    return device_kernel_sources(device, language=language, files={f"{name}.{extension}": source})


def probe_tool_version(
    name: str, executable: str | None, pick_line: Callable[[list[str]], str | None]
) -> ToolchainInfo | None:
    """Run ``<executable> --version`` and describe the tool, for `Toolchain.discover`.

    Args:
        name: the tool's name (`ToolchainInfo.name`).
        executable: the tool's path, or None when it was not found.
        pick_line: chooses the version text from the output's stdout lines
            (None when no line fits: the version is then ``"unknown"``).

    Returns:
        The tool's info, or None when ``executable`` is None, cannot be started
        or does not answer within `VERSION_PROBE_TIMEOUT_S`.
    """
    if executable is None:
        return None
    try:
        done = subprocess.run(
            [executable, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    version = pick_line(done.stdout.splitlines())
    return ToolchainInfo(name, executable, version if version is not None else "unknown")
