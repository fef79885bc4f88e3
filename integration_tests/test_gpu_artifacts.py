"""GPU artifacts without a GPU: every kernel through build_artifact on the cuda ``source``
execution backend (no compiler), then the manifest a GPU machine would load."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tl_runtime
from integration_tests.kernels import ALL_KERNELS, load
from tl_backend_api import create_backend_context


@pytest.mark.parametrize("name", ALL_KERNELS)
def test_source_only_cuda_artifact_has_what_the_launcher_needs(name: str, tmp_path: Path) -> None:
    from integration_tests.kernels.suite import build_case

    context = create_backend_context({"kind": "cuda", "arch": "sm_90"}, execution_backend="source")
    module = load(name)
    case = module.CASES[0]
    directory = build_case(context, module, case, tmp_path / name)
    manifest = tl_runtime.read_manifest(directory)
    assert manifest.adapter == "cuda_driver"
    assert manifest.library.endswith(".cu")
    assert manifest.launch is not None
    assert manifest.launch.block == (case["args"].get("threads", 128),)
    description = json.loads((directory / f"{manifest.name}.kernel.json").read_text())
    names = {p.name for p in manifest.params}
    for argument in description["arguments"]:
        assert argument["name"] in names or argument["kind"] == "dim"
    if not tl_runtime.adapter_availability("cuda_driver").available:
        with pytest.raises(tl_runtime.AdapterUnavailableError):
            tl_runtime.load(directory)
