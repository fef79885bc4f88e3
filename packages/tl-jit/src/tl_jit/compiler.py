"""`compile` and `lower`: a PrimFunc to a `JITKernel` (through the disk cache) or to sources.

The `BackendContext` is created once per compile and handed to every stage
(key, lowering, build, artifact); nothing resolves a backend twice.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tl_jit import checked, env
from tl_jit.cache import default_cache
from tl_jit.interpreted import InterpretedKernel, interpret_requested
from tl_jit.kernel import JITKernel
from tl_jit.keys import ir_key
from tl_jit.pass_configs import (
    check_compile_flags,
    check_verbose,
    dump_dir,
    normalize_pass_configs,
    split_pass_configs,
)
from tl_runtime.fork_safety import fork_waits_for_this

if TYPE_CHECKING:
    from tl_backend_api import BackendContext, KernelSources

OutIdx = int | Sequence[int] | None

_toolchain_versions: dict[str, dict[str, str]] = {}
_scratch_root: Path | None = None


def _require_prim_func(func: object, where: str) -> None:
    from tvm.tirx import PrimFunc

    if not isinstance(func, PrimFunc):
        raise TypeError(
            f"{where}: expected a PrimFunc (a @T.prim_func kernel), got {type(func).__name__}"
        )


def toolchain_versions(context: BackendContext) -> dict[str, str]:
    """``{tool name: version}`` of the context backend's toolchains (discovered once per process)."""
    name = context.backend.name
    if name not in _toolchain_versions:
        versions: dict[str, str] = {}
        for key, toolchain in sorted(context.backend.toolchains.items()):
            info = toolchain.discover()
            versions[key] = "absent" if info is None else f"{info.executable}: {info.version}"
        _toolchain_versions[name] = versions
    return _toolchain_versions[name]


@contextlib.contextmanager
def _pass_context(pass_configs: Mapping[str, object] | None) -> Iterator[None]:
    # TileLang's tl.* keys are ours to interpret (tl_jit.pass_configs); the rest is TVM's.
    tvm_configs, _ = split_pass_configs(pass_configs)
    if not tvm_configs:
        yield
        return
    import tvm

    try:
        scope = tvm.transform.PassContext(config=tvm_configs)
    except (AttributeError, ValueError, TypeError) as exc:
        first = str(exc).splitlines()[0][:300]
        raise ValueError(f"pass_configs: TVM refused {tvm_configs!r}: {first}") from None
    with scope:
        yield


def _artifact_builder() -> Any:
    """``tl_backend_api.build_artifact``, imported on first use (tests swap this seam)."""
    from tl_backend_api import build_artifact

    return build_artifact


def build_into(
    context: BackendContext,
    func: Any,
    directory: Path,
    *,
    out_idx: tuple[int, ...] | None,
    pass_configs: Mapping[str, object] | None,
    key: str | None = None,
) -> Path:
    """Lower and build ``func`` with ``context`` into the artifact directory ``directory``."""
    import tl_jit

    builder = _artifact_builder()
    extra = {"tl-jit": tl_jit.__version__}
    if key:
        extra["tl_jit.cache_key"] = key
    if checked.is_checked(pass_configs):
        extra[checked.MARKER] = checked.kernel_file(func)
    options: dict[str, Any] = {"out_idx": out_idx, "extra_versions": extra}
    dump = dump_dir(split_pass_configs(pass_configs)[1])
    if dump is None:
        dump = kernel_dump_dir(context, func, key)
    if dump is not None:
        options["dump_dir"] = dump
    try:
        with _pass_context(pass_configs):
            return Path(builder(context, func, directory, **options))
    except (ValueError, TypeError, NotImplementedError) as err:
        _note_kernel(err, func)
        raise


def _kernel_name(func: Any) -> str:
    attrs = func.attrs
    return (
        str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs else "kernel"
    )


def _note_kernel(err: BaseException, func: Any) -> None:
    """Add to a refusal a pass raised while lowering (``atomic_add on B: dtype int8 is
    not supported on the CPU``) which kernel and file it came from, unless it already
    names its line (a `TileLangError` located at the kernel's statement): the pass
    knows the IR, not the source."""
    if getattr(err, "lineno", None):
        return
    source = checked.kernel_file(func)
    note = f"while lowering kernel {_kernel_name(func)!r}" + (f" of {source}" if source else "")
    # BaseException.add_note (Python 3.11) by hand: the list it keeps, on 3.10 too.
    notes = getattr(err, "__notes__", None)
    if isinstance(notes, list):
        notes.append(note)
    else:
        setattr(err, "__notes__", [note])  # noqa: B010 - no such attribute on 3.10


def kernel_dump_dir(context: BackendContext, func: Any, key: str | None) -> Path | None:
    """``$TL_DUMP_IR/<kernel name>-<key>/<pipeline name>``: one folder per kernel, or None.

    Every kernel built while ``TL_DUMP_IR`` is set gets its own folder (named by the
    kernel's name and the first 16 hex digits of its key), so one kernel's dumps never
    overwrite another's.

    Raises:
        tl_passes.IRDumpError: the folder cannot be created (names TL_DUMP_IR and the path).
    """
    root = os.environ.get(env.DUMP_IR_ENV)
    if not root:
        return None
    folder = Path(root) / f"{_kernel_name(func)}-{(key or 'uncached')[:16]}" / context.pipeline.name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from tl_passes import IRDumpError

        raise IRDumpError(
            f"{env.DUMP_IR_ENV}={root!r}: cannot create the IR dump folder {folder}: {exc}"
        ) from exc
    return folder


def _scratch_dir() -> Path:
    """A per-process directory for uncached builds, removed at exit."""
    global _scratch_root
    if _scratch_root is None:
        _scratch_root = Path(tempfile.mkdtemp(prefix="tl-jit-"))
        atexit.register(shutil.rmtree, _scratch_root, True)
    return _scratch_root


def create_context(
    target: object = "auto",
    target_host: object = None,
    execution_backend: str | None = "auto",
    purpose: Literal["run", "export"] = "run",
) -> BackendContext:
    """`tl_backend_api.create_backend_context` after applying the environment defaults
    (``purpose="export"``: the execution backend need only build here)."""
    from tl_backend_api import create_backend_context

    return create_backend_context(
        env.default_target(target),
        target_host,
        env.default_execution_backend(execution_backend),
        purpose,
    )


def compile_with_context(
    func: Any,
    context: BackendContext,
    *,
    out_idx: OutIdx = None,
    pass_configs: Mapping[str, object] | None = None,
    verbose: bool = False,
    debug: bool | None = None,
) -> JITKernel:
    """`compile` for an already resolved context (the `jit` wrapper and the autotuner use it)."""
    # A compile holds locks in tvm and LLVM that a forked child could not release: a
    # fork() from another thread waits for it (tl_runtime.fork_safety).
    with fork_waits_for_this():
        return _compile_with_context(func, context, out_idx, pass_configs, verbose, debug)


def _recorded_out_idx(func: Any) -> list[int] | None:
    """The outputs a lazy ``@T.prim_func`` recorded (`tl_ir.lazy_prim_func.OUT_IDX_ATTR`:
    the ``T.empty`` tensors it returns), or None."""
    from tl_ir.lazy_prim_func import OUT_IDX_ATTR

    recorded = func.attrs.get(OUT_IDX_ATTR) if func.attrs is not None else None
    return None if recorded is None else [int(index) for index in recorded]


def _compile_with_context(
    func: Any,
    context: BackendContext,
    out_idx: OutIdx,
    pass_configs: Mapping[str, object] | None,
    verbose: bool,
    debug: bool | None,
) -> JITKernel:
    _require_prim_func(func, "func")
    from tl_runtime.out_idx import normalize_out_idx

    if out_idx is None:
        out_idx = _recorded_out_idx(func)
    normalized_out = normalize_out_idx(out_idx, len(func.params))
    if interpret_requested():
        return InterpretedKernel(func, normalized_out or ())  # type: ignore[return-value]
    pass_configs = normalize_pass_configs(pass_configs)
    if checked.resolve_debug(debug):
        pass_configs = checked.with_checks(pass_configs)
    if checked.is_checked(pass_configs):
        checked.require_support(context)
    started = time.perf_counter()
    key = ir_key(
        func,
        context,
        out_idx=normalized_out,
        pass_configs=pass_configs,
        toolchain_versions=toolchain_versions(context),
    )
    status = "compiled"
    if env.cache_disabled():
        directory = _scratch_dir() / f"{key[:16]}-{len(os.listdir(_scratch_dir()))}"
        build_into(
            context, func, directory, out_idx=normalized_out, pass_configs=pass_configs, key=key
        )
        import tl_runtime

        runtime_kernel = tl_runtime.load(directory)
        status = "compiled (cache disabled)"
    else:
        cache = default_cache()
        loaded = cache.load(key)
        if loaded is None:
            # Under the key's lock: an entry another process finished meanwhile is reused
            # only if it passes the same integrity check `load` applies (a damaged one is
            # rebuilt there), so the path that comes back loads without a second look-up.
            entry = cache.get_or_build(
                key,
                lambda d: build_into(
                    context, func, d, out_idx=normalized_out, pass_configs=pass_configs, key=key
                ),
                is_valid=lambda path: cache.entry_problem(path, key) is None,
            )
            import tl_runtime

            loaded = tl_runtime.load(entry)
        else:
            status = "disk (cache hit)"
        runtime_kernel = loaded
    if verbose:
        report_origin(
            runtime_kernel.name,
            status,
            started,
            f"target {context.target_kind}, execution backend "
            f"{context.execution_backend.name}, key {key[:16]}",
        )
    return JITKernel(runtime_kernel, prim_func=func, context=context, cache_key=key)


def report_origin(name: str, origin: str, started: float, detail: str) -> None:
    """Print where a kernel came from (``verbose=True``): ``[tl_jit] NAME: from ORIGIN``.

    ``origin`` is ``"memory"`` (this process already had it), ``"disk ..."`` (the cache,
    no build) or ``"compiled"``.
    """
    print(
        f"[tl_jit] {name}: from {origin} in {time.perf_counter() - started:.3f} s ({detail})",
        file=sys.stderr,
    )


def compile(
    func: Any,
    out_idx: OutIdx = None,
    target: object = "auto",
    target_host: object = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, object] | None = None,
    verbose: bool = False,
    debug: bool | None = None,
    compile_flags: list[str] | str | None = None,
) -> JITKernel:
    """Compile a PrimFunc into a callable `JITKernel` (or load it from the disk cache).

    Args:
        func: the kernel, a ``@T.prim_func``.
        out_idx: the parameters the call allocates and returns (int or list, negative
            allowed); None: the caller passes every parameter.
        target: a target (``"c"``, ``"llvm"``, ``"cuda"``, a dict, a ``tvm.target.Target``)
            or ``"auto"`` (``TL_TARGET`` if set, else detected).
        target_host: the host target; default from the target.
        execution_backend: a name or ``"auto"`` (``TL_EXECUTION_BACKEND`` if set, else the
            backend's first available one).
        pass_configs: pass-context options applied while lowering and building:
            TileLang's ``tl.*`` keys (`tl_jit.PassConfigKey`; applied or ignored as
            tl_jit.pass_configs documents) and TVM's own keys.
        verbose: print where the kernel came from (memory, disk, compiled) and how long
            it took, to stderr.
        debug: checked mode (tl_jit.checked): an out-of-bounds access raises
            `IndexError` naming the buffer, the index, the extent and the kernel's
            file:line, instead of touching memory. None: ``TL_DEBUG`` decides.
        compile_flags: TileLang's device compiler flags: checked (a string or a list of
            strings) and not applied, as ``tl.device_compile_flags``.

    Returns:
        The `JITKernel` (with ``TL_INTERPRET=1``: a `tl_jit.interpreted.InterpretedKernel`,
        run by the reference interpreter, never compiled).

    Raises:
        TypeError: ``func`` is not a PrimFunc, ``out_idx`` is malformed, ``verbose`` is
            not a bool, or a boolean ``tl.*`` pass config is not a bool (or 0/1).
        ValueError: TVM refused ``pass_configs``, or a ``tl.*`` key is unknown (the
            message lists the known ones; tl_jit.pass_configs).
        tl_backend_api.BackendError: the target, backend or execution backend cannot be
            resolved (the message says what is allowed or what to install).
        tl_backend_api.ToolchainError: the compiler failed (its message and source path).
        tl_jit.errors.CacheError: the cache cannot be written (set TL_CACHE_DIR or
            TL_DISABLE_CACHE=1).
        NotImplementedError: ``debug`` on a backend without checked mode.
    """
    _require_prim_func(func, "func")
    check_compile_flags(compile_flags)
    check_verbose(verbose)
    context = create_context(target, target_host, execution_backend)
    return compile_with_context(
        func, context, out_idx=out_idx, pass_configs=pass_configs, verbose=verbose, debug=debug
    )


def lower(
    func: Any,
    target: object = "auto",
    target_host: object = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, object] | None = None,
) -> KernelSources:
    """Lower ``func`` and generate its source without building it (no compiler runs).

    Works for source-only targets (WebGPU, Metal off Apple machines).

    Returns:
        The `tl_backend_api.KernelSources` (language, files, entry symbol, launches).

    Raises:
        TypeError: ``func`` is not a PrimFunc.
        the errors of `compile`'s resolution.
    """
    _require_prim_func(func, "func")
    from tl_backend_api import lower_to_sources

    context = create_context(target, target_host, execution_backend)
    with _pass_context(pass_configs):
        sources: KernelSources = lower_to_sources(context, func)
    return sources
