"""Fake backend components shared by tl-backend-api's tests (unique module name: importlib mode)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tvm.target import Target

from tl_backend_api import (
    Backend,
    DeviceBuildResult,
    ExecutionBackendSpec,
    KernelSources,
    Pipeline,
    PipelineStage,
)


class CountingCodegen:
    """A DeviceCodegen that counts how often each entry point ran."""

    def __init__(self) -> None:
        self.emitted = 0
        self.built = 0

    def emit_source(self, mod: Any, target: Target) -> KernelSources:
        self.emitted += 1
        return KernelSources(language="c", files={"k.c": "int k;"}, entry_symbol="k")

    def build(self, mod: Any, target: Target) -> DeviceBuildResult:
        self.built += 1  # stands for "a compiler ran"
        return DeviceBuildResult(sources=self.emit_source(mod, target), binaries={"k.so": b"\0"})


def identity_stage(mod: Any, target: Target) -> Any:
    return mod


def pipeline(name: str = "test-pipeline") -> Pipeline:
    return Pipeline(name=name, stages=(PipelineStage("identity", identity_stage),))


def make_backend(
    name: str = "fake",
    kinds: tuple[str, ...] = ("opencl",),
    specs: tuple[ExecutionBackendSpec, ...] | None = None,
    **extra: Any,
) -> Backend:
    """A valid backend for ``kinds``; ``extra`` overrides any other field."""
    fields: dict[str, Any] = {
        "name": name,
        "target_kinds": kinds,
        "pipelines": {k: pipeline() for k in kinds},
        "device_codegens": {k: CountingCodegen() for k in kinds},
        "execution_backends": specs if specs is not None else (ExecutionBackendSpec("tvm_ffi"),),
    }
    fields.update(extra)
    return Backend(**fields)


class FakeDist:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeEntryPoint:
    """An entry point whose load() returns (or raises) what the test says, counting loads."""

    def __init__(self, name: str, loader: Callable[[], Any], dist: str = "tl-codegen-fake") -> None:
        self.name = name
        self.value = f"{dist.replace('-', '_')}.backend:BACKEND"
        self.group = "tl.backends"
        self.dist = FakeDist(dist)
        self.loads = 0
        self._loader = loader

    def load(self) -> Any:
        self.loads += 1
        return self._loader()
