"""``BACKEND``: the dummy descriptor published under ``tl.backends`` as ``opencl``."""

from __future__ import annotations

from tvm.target import Target

from tl_backend_api import Backend, ExecutionBackendSpec
from tl_backend_dummy.codegen import DummyDeviceCodegen, DummyHostCodegen
from tl_backend_dummy.pipeline import PIPELINE
from tl_backend_dummy.toolchain import DummyPackager


def opencl_driver_present() -> bool:
    """The dummy never finds an OpenCL driver, so ``driver`` is always unavailable."""
    return False


def has_images(target: Target) -> bool:
    """Feature ``images``: the target declares an image base-address alignment."""
    return int(target.attrs.get("image_base_address_alignment", 0)) > 0


def describe() -> str:
    """Callback published as the tvm-ffi global ``tl_backend_dummy.describe``."""
    return "tl-backend-dummy"


BACKEND = Backend(
    name="dummy",
    target_kinds=("opencl",),
    pipelines={"opencl": PIPELINE},
    device_codegens={"opencl": DummyDeviceCodegen()},
    execution_backends=(
        ExecutionBackendSpec(
            "driver",
            adapter="tvm_ffi",
            is_available=opencl_driver_present,
            enable_device_compile=True,
            install_hint="an OpenCL driver (the dummy backend never finds one)",
        ),
        ExecutionBackendSpec("fast", adapter="tvm_ffi", enable_device_compile=True),
        ExecutionBackendSpec("cython", enable_host_codegen=True),
    ),
    host_codegens={"cython": DummyHostCodegen()},
    features={"images": has_images},
    callbacks={"tl_backend_dummy.describe": describe},
    toolchains={"dummy-packager": DummyPackager()},
)
