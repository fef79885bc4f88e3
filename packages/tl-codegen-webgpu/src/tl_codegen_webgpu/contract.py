"""Static conformance: mypy --strict checks these assignments against the Protocols.

Keep one line per part; a missing member or a wrong signature fails type-checking.
"""

from __future__ import annotations

from tl_backend_api import Backend, DeviceCodegen, PassPipeline

from .backend import BACKEND
from .codegen import WebGpuDeviceCodegen
from .pipeline import PIPELINE


def check_types() -> None:
    """Never needs to run: type-checking it is the check."""
    descriptor: Backend = BACKEND
    device_codegen: DeviceCodegen = WebGpuDeviceCodegen()
    pipeline: PassPipeline = PIPELINE
    del descriptor, device_codegen, pipeline
