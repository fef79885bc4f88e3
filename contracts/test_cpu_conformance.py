"""The shared kernel suite against every registered backend that runs on the host CPU.

For each installed backend whose descriptor says it runs on the host
(`Backend.runs_on_host`), for each kind it owns, every kernel of
integration_tests/kernels (first case of each, to stay quick) is built
through `tl_backend_api.build_artifact` and run through every available
execution backend the backend offers, then compared with its numpy reference.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from integration_tests.kernels import ALL_KERNELS, load
from integration_tests.kernels.suite import build_case, run_case
from tl_backend_api import (
    create_backend_context,
    list_backends,
    offered_execution_backends,
    probe_availability,
)

CPU_KINDS = [
    pytest.param(backend, kind, id=f"{backend.name}-{kind}")
    for backend in list_backends()
    for kind in backend.target_kinds
    if backend.runs_on_host
]


def test_some_backend_serves_the_cpu() -> None:
    assert CPU_KINDS, "no installed backend runs on the host CPU"


@pytest.mark.parametrize(("backend", "kind"), CPU_KINDS)
@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_suite_runs_on_every_cpu_backend(
    backend: object, kind: str, name: str, tmp_path: Path
) -> None:
    module = load(name)
    case = module.CASES[-1]
    context = create_backend_context(kind)
    assert context.backend is backend
    try:
        artifact = build_case(context, module, case, tmp_path / "artifact")
    except NotImplementedError as exc:
        # A backend says "not written yet" this way (a freshly generated package's
        # device codegen does); the suite checks what a backend implements.
        pytest.skip(f"{backend.name} ({kind}) does not implement it yet: {exc}")
    adapters = {
        spec.adapter
        for spec in offered_execution_backends(context.backend, context.target)
        if spec.adapter is not None and probe_availability(spec)[0]
    }
    assert adapters
    for adapter in sorted(adapters):
        assert run_case(artifact, module, case, adapter) == [], (name, kind, adapter)
