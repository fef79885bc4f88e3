"""The shared kernel suite against every installed backend whose launcher runs here.

For each installed backend and each kind it owns, every kernel of
integration_tests/kernels (the last case of each, to stay quick) is built
through `tl_backend_api.build_artifact` and run through every execution
backend offered for the kind whose launcher says it can run on this machine
(contracts/checks.py, `suite_adapters`), then compared with its numpy
reference. A device backend takes part exactly like a host one: its
``host_kind`` does not matter, its launcher's probe does. The inputs are numpy
arrays, so a device launcher copies them into its driver's buffers (as the
CUDA launcher does).

A kernel that needs what the backend's device does not compute
(`Backend.capabilities`) must be refused at compile time with
`MissingCapabilityError`; it is then skipped with that reason.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.checks import suite_adapters
from integration_tests.kernels import ALL_KERNELS, load
from integration_tests.kernels.suite import build_case, run_case
from tl_backend_api import Backend, MissingCapabilityError, create_backend_context, list_backends
from tl_backend_api.capabilities import kernel_needs, missing_capabilities

KINDS = [
    pytest.param(backend, kind, id=f"{backend.name}-{kind}")
    for backend in list_backends()
    for kind in backend.target_kinds
    if backend.supports_target is None  # predicate-gated backends are run by their own tests
]


def test_the_suite_runs_on_some_backend_here() -> None:
    runnable = [
        kind
        for backend in list_backends()
        for kind in backend.target_kinds
        if suite_adapters(backend, create_backend_context(kind).target)[0]
    ]
    assert runnable, "no installed backend has a launcher that runs on this machine"


@pytest.mark.parametrize(("backend", "kind"), KINDS)
@pytest.mark.parametrize("name", ALL_KERNELS)
def test_kernel_suite_runs_through_every_launcher_that_runs_here(
    backend: Backend, kind: str, name: str, tmp_path: Path
) -> None:
    context = create_backend_context(kind)
    assert context.backend is backend
    adapters, reasons = suite_adapters(backend, context.target)
    if not adapters:
        pytest.skip(f"{backend.name} ({kind}): no launcher runs here: {'; '.join(reasons)}")
    module = load(name)
    case = module.CASES[-1]
    missing = missing_capabilities(
        kernel_needs(module.KERNEL(**case["args"])), context.capabilities
    )
    if missing:
        with pytest.raises(MissingCapabilityError):
            build_case(context, module, case, tmp_path / "artifact")
        pytest.skip(f"{backend.name} ({kind}) cannot compute {name}: {'; '.join(missing)}")
    try:
        artifact = build_case(context, module, case, tmp_path / "artifact")
    except NotImplementedError as exc:
        # A backend says "not written yet" this way (a freshly generated package's
        # device codegen does); the suite checks what a backend implements.
        pytest.skip(f"{backend.name} ({kind}) does not implement it yet: {exc}")
    for adapter in adapters:
        assert run_case(artifact, module, case, adapter) == [], (name, kind, adapter)
