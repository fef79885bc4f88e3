"""`BackendContext`: the resolved backend, target, host and execution backend.

`create_backend_context` resolves everything once; every later stage takes
the context and never resolves a backend again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import attrs
from tvm import IRModule
from tvm.target import Target

from tl_backend_api.capabilities import (
    Capabilities,
    MissingCapabilityError,
    kernel_needs,
    missing_capabilities,
)
from tl_backend_api.descriptors import (
    REMOVED_EXECUTION_BACKENDS,
    Backend,
    ExecutionBackendSpec,
    probe_availability,
    probe_buildable,
)
from tl_backend_api.errors import (
    ExecutionBackendError,
    ExecutionBackendUnavailableError,
    TargetError,
)
from tl_backend_api.kinds import resolve_backend, resolve_target
from tl_backend_api.protocols import (
    DeviceBuildResult,
    DeviceCodegen,
    KernelSources,
    PassPipeline,
)
from tl_backend_api.target import TargetLike, describe_target


@attrs.frozen(eq=False)
class BackendContext:
    """Everything later stages need, resolved once; immutable.

    Attributes:
        backend: the resolved `Backend`.
        target: the normalized target (its ``host`` is `target_host`).
        target_host: the host target.
        execution_backend: the resolved `ExecutionBackendSpec`.
    """

    backend: Backend
    target: Target
    target_host: Target
    execution_backend: ExecutionBackendSpec

    @property
    def target_kind(self) -> str:
        """The target's TVM kind name."""
        return str(self.target.kind.name)

    @property
    def adapter(self) -> str | None:
        """The tl_runtime adapter key that loads the artifact (never the spec's name);
        None for a source-only execution backend, whose artifacts no adapter loads."""
        return self.execution_backend.adapter

    @property
    def pipeline(self) -> PassPipeline:
        """The backend's pipeline for this target's kind."""
        return self.backend.pipelines[self.target_kind]

    @property
    def device_codegen(self) -> DeviceCodegen:
        """The backend's device codegen for this target's kind."""
        return self.backend.device_codegens[self.target_kind]

    @property
    def capabilities(self) -> Capabilities:
        """What the target's device computes (`Backend.capabilities_for` of the target)."""
        return self.backend.capabilities_for(self.target)

    def require_capabilities(self, mod: IRModule) -> None:
        """Refuse ``mod`` when it needs what the target's device cannot compute
        (`refuse_missing_capabilities` for this context's backend and target).

        Raises:
            MissingCapabilityError: names the kernel(s), the backend, the target
                and every missing capability (a dtype, an atomic).
        """
        refuse_missing_capabilities(self.backend, self.target, mod)

    def lower(
        self,
        mod: IRModule,
        *,
        dump_dir: Path | None = None,
        start: str | None = None,
        stop: str | None = None,
    ) -> IRModule:
        """Run the backend's pipeline for this target over ``mod`` (see `PassPipeline.run`).

        A run from the first stage first checks ``mod`` against the target's
        capabilities (`require_capabilities`), so a kernel the device cannot
        compute is refused before any pass or compiler runs.

        Raises:
            MissingCapabilityError: see `require_capabilities`.
        """
        if start is None:
            self.require_capabilities(mod)
        return self.pipeline.run(mod, self.target, dump_dir=dump_dir, start=start, stop=stop)

    def emit_source(self, mod: IRModule) -> KernelSources:
        """Device source for ``mod``; never runs a compiler."""
        return self.device_codegen.emit_source(mod, self.target)

    def build(self, mod: IRModule) -> DeviceBuildResult:
        """Build the device code, or only generate it when the spec says so.

        An execution backend with ``enable_device_compile=False`` gets the
        source-only path: `DeviceCodegen.emit_source` runs, `build` does not,
        and the result holds no binaries.

        Raises:
            ToolchainError: the compiler failed (compile path only).
        """
        if not self.execution_backend.enable_device_compile:
            return DeviceBuildResult(sources=self.emit_source(mod))
        return self.device_codegen.build(mod, self.target)


def refuse_missing_capabilities(backend: Backend, target: Target, mod: IRModule) -> None:
    """Raise when ``mod`` needs what ``backend``'s device for ``target`` cannot compute.

    Compares `kernel_needs` of ``mod`` with `Backend.capabilities_for` ``target``;
    `BackendContext.lower` and the GPU source suite call it before any pass runs.

    Raises:
        UnsupportedError: the kernel imports device source (``T.import_source``) and
            the backend cannot compile any (`refuse_imported_source`).
        MissingCapabilityError: names the kernel(s), the backend, the target and
            every missing capability (a dtype, an atomic).
    """
    refuse_imported_source(backend, target, mod)
    missing = missing_capabilities(kernel_needs(mod), backend.capabilities_for(target))
    if missing:
        names = sorted(str(gv.name_hint) for gv in mod.get_global_vars())
        lines = "\n".join(f"  - {line}" for line in missing)
        raise MissingCapabilityError(
            f"kernel {', '.join(names)} cannot run on target {describe_target(target)} "
            f"(backend {backend.name!r}): it\n{lines}\n"
            "(the backend declares these in Backend.capabilities)"
        )


def offered_execution_backends(
    backend: Backend, target: Target
) -> tuple[ExecutionBackendSpec, ...]:
    """The specs of ``backend`` offered for ``target``, in ``"auto"`` order."""
    return tuple(spec for spec in backend.execution_backends if spec.accepts(target))


Purpose = Literal["run", "export"]
"""Why an execution backend is resolved: ``"run"`` (the artifact is loaded here, so the
spec must be available) or ``"export"`` (the artifact is written for another machine, so
the spec need only build here)."""


def _unbuildable_message(spec: ExecutionBackendSpec, reason: str) -> str:
    hint = spec.build_hint or "what its can_build probe needs"
    return f"{spec.name!r} cannot build here ({reason}); building it needs {hint}"


def _unavailable_message(spec: ExecutionBackendSpec, reason: str) -> str:
    hint = spec.install_hint or (
        f"the dependencies of the {spec.adapter!r} adapter"
        if spec.adapter is not None
        else "what its probe needs"
    )
    return f"{spec.name!r} ({reason}); to use it, install {hint}"


def resolve_execution_backend(
    backend: Backend,
    target: Target,
    execution_backend: str = "auto",
    purpose: Purpose = "run",
) -> ExecutionBackendSpec:
    """Pick the execution backend for ``target``: by name or alias, or ``"auto"``.

    ``"auto"`` picks the first available spec in the backend's declared
    order. A name in a spec's `ExecutionBackendSpec.aliases` selects that spec
    (whose own ``name`` the artifact then records). Availability is probed once
    per process.

    With ``purpose="export"`` the artifact is built to be run elsewhere: a named spec
    needs only to build here (`probe_buildable`: a cubin needs nvcc, not a GPU), and
    ``"auto"`` picks the first available spec, else the first one that builds.

    Raises:
        TypeError: ``execution_backend`` is not a str.
        ExecutionBackendError: an unknown name (the message lists the allowed
            names for this target); ``"ctypes"`` adds that it was removed and
            what replaces it.
        ExecutionBackendUnavailableError: the named spec (or, for ``"auto"``,
            every spec) is unavailable (for export: cannot build); says what to install.
        ValueError: ``purpose`` is neither ``"run"`` nor ``"export"``.
    """
    if purpose not in ("run", "export"):
        raise ValueError(f"purpose: expected 'run' or 'export', got {purpose!r}")
    if not isinstance(execution_backend, str):
        raise TypeError(
            f"execution_backend: expected a name or 'auto', got "
            f"{type(execution_backend).__name__} {execution_backend!r}"
        )
    offered = offered_execution_backends(backend, target)
    allowed = [spec.name for spec in offered]
    aliases = {alias: spec.name for spec in offered for alias in spec.aliases}
    where = f"target {describe_target(target)} (backend {backend.name!r})"
    if execution_backend == "auto":
        reasons = []
        for spec in offered:
            available, reason = probe_availability(spec)
            if available:
                return spec
            reasons.append(_unavailable_message(spec, reason))
        if purpose == "export":
            for spec in offered:
                buildable, reason = probe_buildable(spec)
                if buildable:
                    return spec
                reasons.append(_unbuildable_message(spec, reason))
        detail = "\n".join(f"  - {line}" for line in reasons) or "  - (none offered)"
        raise ExecutionBackendUnavailableError(
            f"no execution backend is available for {where}:\n{detail}"
        )
    for spec in offered:
        if execution_backend in spec.names:
            if purpose == "export":
                buildable, reason = probe_buildable(spec)
                if not buildable:
                    raise ExecutionBackendUnavailableError(
                        f"execution backend {_unbuildable_message(spec, reason)} ({where})"
                    )
                return spec
            available, reason = probe_availability(spec)
            if not available:
                raise ExecutionBackendUnavailableError(
                    f"execution backend {_unavailable_message(spec, reason)} ({where})"
                )
            return spec
    also = f" (or an alias: {aliases})" if aliases else ""
    message = (
        f"execution_backend: expected 'auto' or one of {allowed}{also} for {where}, "
        f"got {execution_backend!r}"
    )
    replacement = REMOVED_EXECUTION_BACKENDS.get(execution_backend)
    if replacement is not None:
        instead = replacement if replacement in allowed else (allowed[0] if allowed else "auto")
        message += (
            f"\n{execution_backend!r} was removed; {replacement!r} replaced it"
            f" (use {instead!r} here)."
        )
    raise ExecutionBackendError(message)


def _resolve_host(target_host: TargetLike) -> Target:
    """`resolve_target` of the host target; its refusal names ``target_host`` (it said
    ``target``, which the caller had given right)."""
    try:
        return resolve_target(target_host)
    except TargetError as error:
        raise TargetError(f"target_host: {error}") from error


def create_backend_context(
    target: TargetLike,
    target_host: TargetLike | None = None,
    execution_backend: str = "auto",
    purpose: Purpose = "run",
) -> BackendContext:
    """Resolve the backend, target, host target and execution backend once.

    Args:
        target: any form `resolve_target` accepts: kind aliases and ``"auto"`` included.
        target_host: the host target; default `Backend.default_host`: the
            target's own host, else the target itself for a backend that runs
            on the host CPU, else a target of the backend's `host_kind`.
        execution_backend: a spec name, or ``"auto"`` (first available in
            the backend's declared order).
        purpose: ``"run"`` (the artifact runs here) or ``"export"`` (it is built here
            to run elsewhere; see `resolve_execution_backend`).

    Raises:
        everything `resolve_target`, `resolve_backend` and
        `resolve_execution_backend` raise.
    """
    normalized = resolve_target(target)
    backend = resolve_backend(normalized)
    host = (
        _resolve_host(target_host) if target_host is not None else backend.default_host(normalized)
    )
    normalized = Target(normalized, host=host)
    spec = resolve_execution_backend(backend, normalized, execution_backend, purpose)
    return BackendContext(
        backend=backend, target=normalized, target_host=host, execution_backend=spec
    )


def imported_sources(mod: IRModule) -> list[str]:
    """The device source texts ``T.import_source`` recorded on ``mod``'s functions
    (`tl_ir.frontend.IMPORTED_SOURCE_ATTR`), each distinct text once, in order."""
    from tl_ir.frontend import IMPORTED_SOURCE_ATTR

    texts: list[str] = []
    for func in mod.functions.values():
        attrs_ = getattr(func, "attrs", None)
        recorded = attrs_.get(IMPORTED_SOURCE_ATTR) if attrs_ is not None else None
        for text in recorded or ():
            if str(text) not in texts:
                texts.append(str(text))
    return texts


def refuse_imported_source(backend: Backend, target: Target, mod: IRModule) -> None:
    """Raise when ``mod`` imports device source that ``backend`` cannot compile.

    A backend compiles imported source when its descriptor names the language
    (`Backend.imported_source_language`); its device codegen places the text.

    Raises:
        UnsupportedError: the kernel imports source and the backend names no
            language (names the kernel(s), the backend, the target and what to write
            instead).
    """
    if backend.imported_source_language is not None or not imported_sources(mod):
        return
    from tl_ir.errors import UnsupportedError

    names = sorted(str(gv.name_hint) for gv in mod.get_global_vars())
    raise UnsupportedError(
        f"kernel {', '.join(names)} imports device source with T.import_source, which "
        f"backend {backend.name!r} (target {describe_target(target)}) cannot compile: "
        "source written for a GPU (CUDA C device helpers) does not build here. Write the "
        "helper's arithmetic in the kernel language (T.Parallel, bit operations, "
        "T.reinterpret) instead of calling it with T.call_extern, or compile for a "
        "backend whose descriptor names an imported_source_language"
    )
