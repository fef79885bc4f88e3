"""The backend contract: Backend descriptors, the registry, entry-point discovery and Protocols.

Every target backend is one `Backend` descriptor published under the
``tl.backends`` entry-point group (the entry point's name is the target kind
it serves). `create_backend_context` resolves target, backend and execution
backend once; later stages take the resulting `BackendContext`.
"""

from __future__ import annotations

from tl_backend_api.artifact import build_artifact, lower_to_sources
from tl_backend_api.conformance import (
    assert_conforms,
    conformance_problems,
    installed_adapter_keys,
)
from tl_backend_api.context import (
    BackendContext,
    create_backend_context,
    offered_execution_backends,
    resolve_execution_backend,
)
from tl_backend_api.descriptors import (
    HOST_DEVICE_TYPE,
    REMOVED_EXECUTION_BACKENDS,
    Backend,
    ExecutionBackendSpec,
    always,
    clear_availability_cache,
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
    UnknownFeatureError,
)
from tl_backend_api.gpu.sources import (
    build_device_sources,
    device_kernel_sources,
    emit_single_source,
    kernel_launches,
    module_kernel_name,
    probe_tool_version,
)
from tl_backend_api.kinds import (
    auto_candidates,
    canonical_kind,
    detect_auto_target_kind,
    is_host_target,
)
from tl_backend_api.pipeline import (
    DUMP_IR_ENV,
    PipelineStage,
    StagedPipeline,
    pipeline_from_passes,
)
from tl_backend_api.protocols import (
    DeviceBuildResult,
    DeviceCodegen,
    HostCodegen,
    HostCodegenHook,
    KernelArgument,
    KernelLaunch,
    KernelSources,
    PassPipeline,
    Toolchain,
    ToolchainInfo,
    is_kebab_case,
)
from tl_backend_api.registry import (
    ENTRY_POINT_GROUP,
    EntryPointLike,
    PluginLoadFailure,
    discovery_errors,
    get_backend,
    isolated_registry,
    list_backends,
    register_backend,
    registered_backends,
    registered_kinds,
    resolve_backend,
)
from tl_backend_api.report import backend_rows, format_backend_report
from tl_backend_api.target import (
    TargetLike,
    describe_target,
    normalize_target,
    parse_target_string,
    target_key,
    target_kind,
)

__all__ = [
    "DUMP_IR_ENV",
    "ENTRY_POINT_GROUP",
    "HOST_DEVICE_TYPE",
    "REMOVED_EXECUTION_BACKENDS",
    "AmbiguousBackendError",
    "Backend",
    "BackendConflictError",
    "BackendContext",
    "BackendError",
    "BackendNotFoundError",
    "BackendValidationError",
    "DeviceBuildResult",
    "DeviceCodegen",
    "EntryPointLike",
    "ExecutionBackendError",
    "ExecutionBackendSpec",
    "ExecutionBackendUnavailableError",
    "HostCodegen",
    "HostCodegenHook",
    "KernelArgument",
    "KernelLaunch",
    "KernelSources",
    "PassPipeline",
    "PipelineStage",
    "PluginImportError",
    "PluginLoadFailure",
    "StagedPipeline",
    "TargetError",
    "TargetLike",
    "Toolchain",
    "ToolchainError",
    "ToolchainInfo",
    "UnknownFeatureError",
    "always",
    "assert_conforms",
    "auto_candidates",
    "backend_rows",
    "build_artifact",
    "build_device_sources",
    "canonical_kind",
    "clear_availability_cache",
    "conformance_problems",
    "create_backend_context",
    "describe_target",
    "detect_auto_target_kind",
    "device_kernel_sources",
    "discovery_errors",
    "emit_single_source",
    "format_backend_report",
    "get_backend",
    "installed_adapter_keys",
    "is_host_target",
    "is_kebab_case",
    "isolated_registry",
    "kernel_launches",
    "list_backends",
    "lower_to_sources",
    "module_kernel_name",
    "normalize_target",
    "offered_execution_backends",
    "parse_target_string",
    "pipeline_from_passes",
    "probe_availability",
    "probe_buildable",
    "probe_tool_version",
    "register_backend",
    "registered_backends",
    "registered_kinds",
    "resolve_backend",
    "resolve_execution_backend",
    "target_key",
    "target_kind",
]
