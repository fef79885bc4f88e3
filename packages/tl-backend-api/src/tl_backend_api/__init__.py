"""The backend contract: Backend descriptors, target resolution, the build, conformance.

Every target backend is one `Backend` descriptor published under the
``tl.backends`` entry-point group (the entry point's name is the target kind
it serves). `create_backend_context` resolves target, backend and execution
backend once; later stages take the resulting `BackendContext`.

The exports are what backend packages, the core (`tl_jit`) and users use;
test seams (`tl_backend_api.registry.isolated_registry`, `register_backend`...)
and building blocks one backend family uses (`tl_backend_api.gpu.*`) are
imported from their modules. docs/backends.md, "What the contract holds",
lists what was removed and why.
"""

from __future__ import annotations

from tl_backend_api.artifact import build_artifact, lower_to_sources
from tl_backend_api.capabilities import Capabilities, MissingCapabilityError
from tl_backend_api.conformance import assert_conforms, conformance_problems
from tl_backend_api.context import (
    BackendContext,
    create_backend_context,
    imported_sources,
    offered_execution_backends,
)
from tl_backend_api.descriptors import (
    Backend,
    ExecutionBackendSpec,
    probe_availability,
    probe_buildable,
)
from tl_backend_api.errors import (
    AmbiguousBackendError,
    BackendConflictError,
    BackendError,
    BackendNotFoundError,
    BackendValidationError,
    ExecutionBackendError,
    ExecutionBackendUnavailableError,
    PluginImportError,
    TargetError,
    ToolchainError,
)
from tl_backend_api.kinds import (
    auto_candidates,
    detect_auto_target_kind,
    resolve_backend,
    resolve_target,
    target_kind,
)
from tl_backend_api.pipeline import Pipeline, PipelineStage, pipeline_from_passes
from tl_backend_api.protocols import (
    DeviceBuildResult,
    DeviceCodegen,
    KernelArgument,
    KernelLaunch,
    KernelSources,
    PassPipeline,
    Toolchain,
    ToolchainInfo,
)
from tl_backend_api.registry import discovery_errors, get_backend, list_backends
from tl_backend_api.report import backend_rows, format_backend_report
from tl_backend_api.target import TargetLike, normalize_target

__all__ = [
    "AmbiguousBackendError",
    "Backend",
    "BackendConflictError",
    "BackendContext",
    "BackendError",
    "BackendNotFoundError",
    "BackendValidationError",
    "Capabilities",
    "DeviceBuildResult",
    "DeviceCodegen",
    "ExecutionBackendError",
    "ExecutionBackendSpec",
    "ExecutionBackendUnavailableError",
    "KernelArgument",
    "KernelLaunch",
    "KernelSources",
    "MissingCapabilityError",
    "PassPipeline",
    "Pipeline",
    "PipelineStage",
    "PluginImportError",
    "TargetError",
    "TargetLike",
    "Toolchain",
    "ToolchainError",
    "ToolchainInfo",
    "assert_conforms",
    "auto_candidates",
    "backend_rows",
    "build_artifact",
    "conformance_problems",
    "create_backend_context",
    "detect_auto_target_kind",
    "discovery_errors",
    "format_backend_report",
    "get_backend",
    "imported_sources",
    "list_backends",
    "lower_to_sources",
    "normalize_target",
    "offered_execution_backends",
    "pipeline_from_passes",
    "probe_availability",
    "probe_buildable",
    "resolve_backend",
    "resolve_target",
    "target_kind",
]
