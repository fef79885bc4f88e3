"""Capabilities: what a kernel needs, what a device computes, and the refusal before lowering."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from tl_backend_api_testkit import CountingCodegen, make_backend

from tl_backend_api import (
    BackendValidationError,
    Capabilities,
    ExecutionBackendSpec,
    MissingCapabilityError,
    create_backend_context,
    lower_to_sources,
)
from tl_backend_api.artifact import kernel_module
from tl_backend_api.capabilities import kernel_needs, memory_space, missing_capabilities
from tl_backend_api.registry import register_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from integration_tests.kernels import load


def suite_kernel(name: str, case: int = 0) -> Any:
    module = load(name)
    return module.KERNEL(**module.CASES[case]["args"])


def test_kernel_needs_reads_float_dtypes_and_atomics() -> None:
    assert kernel_needs(suite_kernel("softmax")).float_dtypes == {"float32"}
    assert kernel_needs(suite_kernel("softmax")).atomics == frozenset()
    gemm = kernel_needs(suite_kernel("gemm"))  # fp16 operands, fp32 accumulation
    assert gemm.float_dtypes == {"float16", "float32"}
    atomic = kernel_needs(suite_kernel("atomic_sum"))
    assert atomic.atomics == {("global", "float32")}
    module_needs = kernel_needs(kernel_module(suite_kernel("gemm"), "gemm"))
    assert module_needs == gemm


def test_memory_spaces_of_scopes() -> None:
    assert [memory_space(s) for s in ("", "global", "shared.dyn", "local.fragment")] == [
        "global",
        "global",
        "shared",
        "local",
    ]


def test_missing_capabilities_names_each_dtype_and_atomic() -> None:
    needs = kernel_needs(suite_kernel("atomic_sum"))
    assert missing_capabilities(needs, Capabilities()) == []
    only_int = Capabilities(float_dtypes={"float32"}, atomics={"global": {"int32"}})
    assert missing_capabilities(needs, only_int) == [
        "updates float32 atomically in global memory; the device's global atomics take ['int32']"
    ]
    no_atomics = Capabilities(atomics={})
    assert missing_capabilities(needs, no_atomics) == [
        "updates float32 atomically in global memory; the device's global atomics take none"
    ]
    assert kernel_needs(suite_kernel("softmax")).integer_dtypes == {"int32"}
    narrow = Capabilities(integer_dtypes={"int8"})
    assert missing_capabilities(kernel_needs(suite_kernel("softmax")), narrow) == [
        "computes in int32; the device's integers are ['int8'] only"
    ]
    half = Capabilities(float_dtypes={"float32"})
    assert missing_capabilities(kernel_needs(suite_kernel("gemm")), half) == [
        "computes in float16; the device computes in ['float32'] only"
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"float_dtypes": "float32"}, "float_dtypes: expected a set of dtype names"),
        ({"float_dtypes": {"int32"}}, "expected floating-point dtypes, got 'int32'"),
        ({"integer_dtypes": {"float32"}}, "expected integer dtypes, got 'float32'"),
        ({"integer_dtypes": {"bool"}}, "expected integer dtypes, got 'bool'"),
        ({"integer_dtypes": "int32"}, "integer_dtypes: expected a set of dtype names"),
        ({"atomics": ["global"]}, "atomics: expected a mapping"),
        ({"atomics": {"texture": {"int32"}}}, "expected memory spaces among"),
        ({"atomics": {"global": {3}}}, r"atomics\['global'\]: expected dtype names"),
    ],
)
def test_malformed_capabilities_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(BackendValidationError, match=message):
        Capabilities(**kwargs)


@pytest.mark.usefixtures("fresh_registry")
def test_lowering_refuses_a_kernel_the_device_cannot_compute() -> None:
    codegen = CountingCodegen()
    register_backend(
        make_backend(
            specs=(ExecutionBackendSpec("run", adapter="tvm_ffi"),),
            device_codegens={"opencl": codegen},
            capabilities=lambda target: Capabilities(
                float_dtypes={"float32"}, atomics={"global": {"int32"}}
            ),
        )
    )
    context = create_backend_context("opencl")
    with pytest.raises(MissingCapabilityError) as info:
        lower_to_sources(context, suite_kernel("gemm"))
    message = str(info.value)
    assert "kernel main cannot run on target 'opencl' (backend 'fake')" in message
    assert "computes in float16" in message
    with pytest.raises(MissingCapabilityError, match="updates float32 atomically in global"):
        lower_to_sources(context, suite_kernel("atomic_sum"))
    assert codegen.emitted == 0  # refused before the pipeline and codegen ran
    assert isinstance(MissingCapabilityError("x"), NotImplementedError)
    lower_to_sources(context, suite_kernel("softmax"))  # fp32 only: lowers
    assert codegen.emitted == 1


@pytest.mark.parametrize(("kind", "allowed"), [("metal", "float16"), ("webgpu", "float16")])
def test_gpu_backends_without_fp64_refuse_it_before_lowering(kind: str, allowed: str) -> None:
    from tl_backend_api import resolve_backend

    backend = resolve_backend(kind)
    floats = backend.capabilities_for(create_backend_context(kind).target).float_dtypes
    assert floats is not None and allowed in floats and "float64" not in floats


def test_the_gpu_source_suite_expects_the_refusal_of_an_excluded_kernel() -> None:
    import attrs
    from tvm.target import Target

    from tl_backend_api import resolve_backend
    from tl_backend_api.gpu.suite import GpuSourceSuite

    metal = resolve_backend("metal")
    no_half = attrs.evolve(metal, capabilities=Capabilities(float_dtypes={"float32"}))
    suite = GpuSourceSuite(
        backend=no_half,
        kind="metal",
        make_target=lambda: Target({"kind": "metal"}, host=Target("llvm")),
        source_extension="metal",
    )
    assert suite.check_suite_kernel(load("gemm"), "gemm") is None  # fp16: refused as expected
    assert suite.check_suite_kernel(load("softmax"), "softmax") is not None
