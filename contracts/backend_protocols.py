"""Static conformance: every installed backend's parts satisfy the Protocols.

mypy --strict checks each annotated assignment below, structlog-style:
``x: Protocol = implementation`` fails type-checking when a member is
missing or has the wrong signature (``isinstance`` on a runtime-checkable
Protocol only checks names). A backend package installed in CI adds its
block here; contracts/test_conformance.py fails until it does.
"""

from __future__ import annotations

from collections.abc import Mapping

from tl_backend_api import (
    Backend,
    DeviceCodegen,
    HostCodegen,
    PassPipeline,
    StagedPipeline,
    Toolchain,
)
from tl_backend_dummy import backend as dummy_backend
from tl_backend_dummy.codegen import DummyDeviceCodegen, DummyHostCodegen
from tl_backend_dummy.pipeline import PIPELINE as DUMMY_PIPELINE
from tl_backend_dummy.toolchain import DummyPackager

# tl_backend_api's own ready-made pipeline is a PassPipeline.
staged_pipeline: type[PassPipeline] = StagedPipeline

# ---- tl-backend-dummy (integration_tests/plugins/tl-backend-dummy), kind "opencl"
dummy_descriptor: Backend = dummy_backend.BACKEND
dummy_pipeline: PassPipeline = DUMMY_PIPELINE
dummy_device_codegen: DeviceCodegen = DummyDeviceCodegen()
dummy_host_codegen: HostCodegen = DummyHostCodegen()
dummy_toolchain: Toolchain = DummyPackager()

#: Backend name -> its descriptor, for every backend checked statically above.
STATICALLY_CHECKED: Mapping[str, Backend] = {
    dummy_descriptor.name: dummy_descriptor,
}
