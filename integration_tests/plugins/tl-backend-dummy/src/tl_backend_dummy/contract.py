"""Static conformance: mypy --strict checks these assignments against the Protocols.

contracts/ imports this module for every installed backend and checks that it
names each part of ``BACKEND``.
"""

from __future__ import annotations

from tl_backend_api import Backend, DeviceCodegen, PassPipeline, Toolchain
from tl_backend_dummy.backend import BACKEND
from tl_backend_dummy.codegen import DummyDeviceCodegen
from tl_backend_dummy.pipeline import PIPELINE
from tl_backend_dummy.toolchain import DummyPackager


def check_types() -> None:
    """Never needs to run: type-checking it is the check."""
    descriptor: Backend = BACKEND
    pipeline: PassPipeline = PIPELINE
    device_codegen: DeviceCodegen = DummyDeviceCodegen()
    toolchain: Toolchain = DummyPackager()
    del descriptor, pipeline, device_codegen, toolchain
