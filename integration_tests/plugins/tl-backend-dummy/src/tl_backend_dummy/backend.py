"""``BACKEND``: the dummy descriptor published under ``tl.backends`` as ``ext_dev``.

``ext_dev`` is TVM's placeholder kind for an external device: no real backend
serves it, so the dummy never collides with an installed one.
"""

from __future__ import annotations

from tvm.target import Target

from tl_backend_api import Backend, Capabilities, ExecutionBackendSpec
from tl_backend_dummy.codegen import DummyDeviceCodegen
from tl_backend_dummy.pipeline import PIPELINE
from tl_backend_dummy.toolchain import DummyPackager


def device_driver_present() -> bool:
    """The dummy never finds a device driver, so ``driver`` is always unavailable."""
    return False


def capabilities(target: Target) -> Capabilities:
    """What the dummy device computes: float32 only, and float16 too when the target names
    a device model (``{"kind": "ext_dev", "model": ...}``); no atomics."""
    named = str(target.attrs.get("model", "")) not in ("", "unknown")
    floats = {"float32", "float16"} if named else {"float32"}
    return Capabilities(float_dtypes=floats, atomics={})


def describe() -> str:
    """Callback published as the tvm-ffi global ``tl_backend_dummy.describe``."""
    return "tl-backend-dummy"


BACKEND = Backend(
    name="dummy",
    target_kinds=("ext_dev",),
    pipelines={"ext_dev": PIPELINE},
    device_codegens={"ext_dev": DummyDeviceCodegen()},
    execution_backends=(
        ExecutionBackendSpec(
            "driver",
            adapter="tvm_ffi",
            is_available=device_driver_present,
            enable_device_compile=True,
            install_hint="a device driver (the dummy backend never finds one)",
        ),
        ExecutionBackendSpec("fast", adapter="tvm_ffi", enable_device_compile=True),
        ExecutionBackendSpec("cython"),
    ),
    capabilities=capabilities,
    callbacks={"tl_backend_dummy.describe": describe},
    toolchains={"dummy-packager": DummyPackager()},
)
