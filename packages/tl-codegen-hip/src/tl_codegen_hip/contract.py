"""Static conformance: mypy --strict checks these assignments against the Protocols.

Keep one line per part; a missing member or a wrong signature fails type-checking.
"""

from __future__ import annotations

from tl_backend_api import Backend, DeviceCodegen, PassPipeline, Toolchain

from .backend import BACKEND
from .codegen import HipDeviceCodegen
from .pipeline import PIPELINE
from .toolchain import Lld


def check_types() -> None:
    """Never needs to run: type-checking it is the check."""
    descriptor: Backend = BACKEND
    device_codegen: DeviceCodegen = HipDeviceCodegen()
    pipeline: PassPipeline = PIPELINE
    toolchain: Toolchain = Lld()
    del descriptor, device_codegen, pipeline, toolchain
