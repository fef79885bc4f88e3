"""Discovery, override and selection through the real installed test plugins.

tl-backend-dummy serves ``opencl``; tl-backend-broken declares ``vulkan`` and
raises on import. Each check runs in a fresh interpreter so "loaded once,
only for the kind asked" is observed from a clean process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_resolving_a_kind_imports_only_that_kinds_plugin() -> None:
    out = _run(
        """
        import sys
        import tl_backend_api as api
        import tvm_ffi
        assert "tl_backend_dummy" not in sys.modules  # nothing loads at import
        import tl_backend_dummy.backend
        # callbacks are registered at first resolution, not at import
        assert tvm_ffi.get_global_func("tl_backend_dummy.describe", allow_missing=True) is None
        backend = api.resolve_backend("opencl")
        assert tvm_ffi.get_global_func("tl_backend_dummy.describe")() == "tl-backend-dummy"
        assert backend.name == "dummy"
        assert "tl_backend_dummy.backend" in sys.modules
        assert "tl_backend_broken.backend" not in sys.modules
        assert api.discovery_errors() == ()
        print("ok")
        """
    )
    assert out.strip() == "ok"


def test_a_broken_plugin_is_named_and_breaks_nothing_else() -> None:
    out = _run(
        """
        import warnings
        import tl_backend_api as api
        try:
            api.resolve_backend("vulkan")
        except api.PluginImportError as exc:
            print("error:", exc)
        names = [b.name for b in api.list_backends()]
        print("has dummy:", "dummy" in names)
        print("failures:", [f.distribution for f in api.discovery_errors()])
        print("opencl:", api.resolve_backend("opencl").name)
        print(api.format_backend_report())
        """
    )
    assert "error: no backend for target kind 'vulkan'" in out
    assert "'tl-backend-broken'" in out and "fails to import on purpose" in out
    # Every other installed backend still loads (the list grows as codegen
    # packages land, so only the test plugin's presence is asserted).
    assert "has dummy: True" in out
    assert "failures: ['tl-backend-broken']" in out
    assert "opencl: dummy" in out
    assert "plugins that failed to load: 1" in out


def test_an_explicit_override_replaces_the_plugin_backend() -> None:
    out = _run(
        """
        import attrs
        import tl_backend_api as api
        from tl_backend_dummy.backend import BACKEND
        original = api.resolve_backend("opencl")
        assert original is BACKEND
        try:
            api.register_backend(attrs.evolve(BACKEND))
        except api.BackendConflictError as exc:
            print("conflict:", exc)
        mine = attrs.evolve(BACKEND, execution_backends=(api.ExecutionBackendSpec("tvm_ffi"),))
        api.register_backend(mine, override=True)
        print("resolved mine:", api.resolve_backend("opencl") is mine)
        print("auto:", api.create_backend_context("opencl").execution_backend.name)
        """
    )
    assert "conflict: a different backend is already registered under the name 'dummy'" in out
    assert "resolved mine: True" in out
    assert "auto: tvm_ffi" in out


def test_selection_against_the_dummy_backend() -> None:
    out = _run(
        """
        import tl_backend_api as api
        import tvm
        from tl_backend_dummy.codegen import DummyDeviceCodegen

        context = api.create_backend_context("opencl")
        print("auto:", context.execution_backend.name, context.adapter)
        for name in ("driver", "ctypes", "nope"):
            try:
                api.create_backend_context("opencl", execution_backend=name)
            except api.BackendError as exc:
                print(f"{name}:", type(exc).__name__, str(exc).replace(chr(10), " | "))
        n = tvm.tirx.Var("n", "int32")
        func = tvm.tirx.PrimFunc([n], tvm.tirx.Evaluate(0)).with_attr("global_symbol", "k")
        mod = tvm.IRModule({"k": func})
        lowered = context.lower(mod)
        print("lowered target:", lowered["k"].attrs["target"].kind.name)
        built = context.build(lowered)
        print("compiled:", built.compiled, sorted(built.binaries))
        source_only = api.create_backend_context("opencl", execution_backend="cython")
        before = DummyDeviceCodegen.build_count
        result = source_only.build(lowered)
        print("source-only:", result.compiled, DummyDeviceCodegen.build_count == before)
        print("host:", sorted(source_only.generate_host(lowered).files))
        print("images:", context.supports("images"))
        print("callback:", tvm.get_global_func("tl_backend_dummy.describe")())
        """
    )
    assert "auto: fast tvm_ffi" in out
    assert "driver: ExecutionBackendUnavailableError" in out and "OpenCL driver" in out
    assert (
        "ctypes: ExecutionBackendError" in out
        and "'ctypes' was removed; 'cython' replaced it" in out
    )
    assert "['driver', 'fast', 'cython']" in out
    assert "nope: ExecutionBackendError" in out
    assert "lowered target: opencl" in out
    assert "compiled: True ['k.tvmscript.bin']" in out
    assert "source-only: False True" in out
    assert "host: ['host.c']" in out
    assert "images: True" in out
    assert "callback: tl-backend-dummy" in out


@pytest.mark.parametrize("command", [["-m", "tl_backend_api"]])
def test_the_report_command_runs(command: list[str]) -> None:
    result = subprocess.run([sys.executable, *command], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "dummy" in result.stdout and "opencl" in result.stdout
    assert "tl-backend-broken" in result.stdout
