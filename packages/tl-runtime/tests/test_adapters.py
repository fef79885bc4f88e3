"""Adapters are found through the entry-point group ``tl.adapters``: tl-runtime's own, and
any installed package's (simulated here by a distribution written onto ``sys.path``)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import runtime_kernels

import tl_runtime
from tl_runtime.adapters import _forget_installed_adapters
from tl_runtime.adapters.cython_adapter import CythonAdapter
from tl_runtime.adapters.tvm_ffi_adapter import TvmFfiAdapter

Artifact = Callable[..., Path]

THIRD_PARTY_MODULE = '''
"""An adapter shipped by another package: reuses tl-runtime's checker and pack_result."""

import tl_runtime


class CountingAdapter:
    key = "counting"
    calls = 0

    def __init__(self, manifest, directory, checker):
        self.checker = checker
        self.module, self.function = tl_runtime.load_tvm_ffi_library(manifest, directory)

    @classmethod
    def probe(cls):
        return tl_runtime.Availability(True)

    def make_call(self):
        def call(*args):
            prepared = self.checker.prepare(args)
            self.function(*prepared.args)
            type(self).calls += 1
            return tl_runtime.pack_result(prepared.outputs)

        return call


class WrongKey(CountingAdapter):
    key = "something_else"


class Unavailable(CountingAdapter):
    key = "unavailable"

    @classmethod
    def probe(cls):
        return tl_runtime.Availability(False, "needs hardware this machine lacks")
'''


def _install_distribution(root: Path, name: str, entry_points: dict[str, str]) -> None:
    """Write a minimal installed distribution (``*.dist-info``) declaring ``entry_points``."""
    info = root / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[tl.adapters]\n{lines}")


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package ``counting-adapter`` installed on sys.path with several adapters."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "counting_launcher.py").write_text(THIRD_PARTY_MODULE)
    _install_distribution(
        root,
        "counting-adapter",
        {
            "counting": "counting_launcher:CountingAdapter",
            "wrong_key": "counting_launcher:WrongKey",
            "unavailable": "counting_launcher:Unavailable",
            "broken": "counting_launcher_missing:Adapter",
        },
    )
    monkeypatch.syspath_prepend(str(root))
    _forget_installed_adapters()
    yield root
    sys.modules.pop("counting_launcher", None)
    _forget_installed_adapters()


def test_own_adapters_are_declared_as_entry_points() -> None:
    keys = tl_runtime.adapter_keys()
    assert {"tvm_ffi", "cython"} <= keys
    # Execution-backend names that are not launchers, and adapters that did nothing, are gone.
    assert not keys & {"nvrtc", "torch", "ctypes"}
    assert tl_runtime.get_adapter("tvm_ffi") is TvmFfiAdapter
    assert tl_runtime.get_adapter("cython") is CythonAdapter
    for key in keys & {"tvm_ffi", "cython"}:
        assert tl_runtime.get_adapter(key).key == key


def test_unknown_key_lists_the_installed_adapters() -> None:
    with pytest.raises(tl_runtime.AdapterUnavailableError) as info:
        # A reserved key (tl_backend_api.conformance.RESERVED_ADAPTER_KEY_PREFIX): no
        # backend can take it, so installing one never breaks this test.
        tl_runtime.get_adapter("never-installed-opencl")
    message = str(info.value)
    assert "'never-installed-opencl' is not installed" in message
    assert "'cython'" in message and "'tvm_ffi'" in message
    with pytest.raises(TypeError, match="adapter key: expected a str"):
        tl_runtime.get_adapter(None)  # type: ignore[arg-type]


def test_a_package_ships_its_own_adapter(third_party: Path, artifact: Artifact) -> None:
    assert "counting" in tl_runtime.adapter_keys()
    assert tl_runtime.adapter_availability("counting")
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter="counting")
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal(kernel(a, a), 2 * a)
    adapter_class = tl_runtime.get_adapter("counting")
    assert adapter_class.calls == 1  # type: ignore[attr-defined]
    # The public checker it reuses refuses bad arguments with the usual messages.
    with pytest.raises(TypeError, match="parameter 'B': expected dtype float32"):
        kernel(a, a.astype(np.float64))


def test_broken_third_party_adapters_are_clear_errors(
    third_party: Path, artifact: Artifact
) -> None:
    with pytest.raises(tl_runtime.AdapterUnavailableError, match=r"'broken'.*failed to load"):
        tl_runtime.get_adapter("broken")
    with pytest.raises(
        tl_runtime.AdapterUnavailableError, match=r"'key' attribute must equal.*'wrong_key'"
    ):
        tl_runtime.get_adapter("wrong_key")
    unavailable = tl_runtime.adapter_availability("unavailable")
    assert not unavailable and "hardware" in unavailable.reason
    with pytest.raises(tl_runtime.AdapterUnavailableError, match="'unavailable' is unavailable"):
        tl_runtime.load(artifact("vadd"), adapter="unavailable")
    broken = tl_runtime.adapter_availability("broken")
    assert not broken and "failed to load" in broken.reason


def test_a_key_declared_by_two_packages_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, target in (("first-pkg", "a:X"), ("second-pkg", "b:Y")):
        root = tmp_path / name
        _install_distribution(root, name, {"twice": target})
        monkeypatch.syspath_prepend(str(root))
    _forget_installed_adapters()
    try:
        with pytest.raises(tl_runtime.AdapterUnavailableError, match="more than one"):
            tl_runtime.get_adapter("twice")
    finally:
        _forget_installed_adapters()


def test_loading_imports_only_the_requested_adapter(artifact: Artifact) -> None:
    """The fresh-process load path stays cheap: other adapters' modules are not imported."""
    script = textwrap.dedent(
        f"""
        import sys, tl_runtime
        tl_runtime.load({str(artifact("vadd"))!r}, adapter="tvm_ffi")
        print(sorted(m for m in sys.modules if m.startswith("tl_runtime")))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = ast.literal_eval(proc.stdout.strip())
    assert "tl_runtime.adapters.tvm_ffi_adapter" in loaded
    assert "tl_runtime.adapters.cython_adapter" not in loaded
    # No plug-in's module either (a device launcher is another distribution).
    assert all(m == "tl_runtime" or m.startswith("tl_runtime.") for m in loaded), loaded


def test_argument_device_types_decide_which_arrays_run(
    artifact_copy: Artifact, adapter: str
) -> None:
    """A kernel whose manifest accepts device arrays only refuses host (numpy) arrays on
    every call: neither adapter's fast path may skip the device check of the full path."""
    directory = artifact_copy("vadd")
    manifest = tl_runtime.read_manifest(directory)
    fields = {f: getattr(manifest, f) for f in manifest.__dataclass_fields__}
    tl_runtime.write_artifact(
        directory, tl_runtime.Manifest(**{**fields, "argument_device_types": (2,)}), ["vadd.so"]
    )
    kernel = tl_runtime.load(directory, adapter=adapter)
    # Arrays the fast paths would take (64-byte aligned, the kernel's declared alignment).
    a, b, c = (runtime_kernels.aligned_array(np, (1024,), "float32") for _ in range(3))
    for _ in range(3):  # the first call and the repeated ones (cached views)
        with pytest.raises(ValueError, match=r"parameter 'A': expected a tensor on DLPack device"):
            kernel(a, b, c)


def test_own_adapter_table_mirrors_the_declared_entry_points() -> None:
    """tl-runtime resolves its own adapters from a table (no metadata read on the hit path):
    the table must say exactly what its pyproject.toml publishes under tl.adapters."""
    import importlib.metadata

    from tl_runtime.adapters import ENTRY_POINT_GROUP, OWN_ADAPTERS

    declared = {
        point.name: point.value
        for point in importlib.metadata.distribution("tl-runtime").entry_points
        if point.group == ENTRY_POINT_GROUP
    }
    assert declared == dict(OWN_ADAPTERS)


def test_own_adapters_load_without_reading_package_metadata() -> None:
    """A fresh process resolves a tl-runtime adapter with importlib.metadata never imported."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tl_runtime.adapters import get_adapter\n"
        "assert get_adapter('cython').key == 'cython'\n"
        "print('importlib.metadata' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
