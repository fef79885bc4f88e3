"""The disk cache never returns a kernel other than the one the source describes: a global
that a builder reads only through a kernel's parameter annotation (here under PEP 563,
where the annotation is a string the kernel parser evaluates) is part of the front-end key.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import types
from pathlib import Path

import pytest

KERNEL_SOURCE = """
from __future__ import annotations

import tl_jit
import tl_jit.language as T

LENGTH = {length}


@tl_jit.jit(out_idx=[1], target="c")
def copy_kernel(n):
    @T.prim_func
    def main(X: T.Tensor((LENGTH,), "float32"), Y: T.Tensor((LENGTH,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(8):
                Y[i] = X[i]

    return main
"""


def _fresh_module(directory: Path, name: str, length: int) -> types.ModuleType:
    """The kernel module as a new process would import it (a new @jit object, no memo)."""
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(KERNEL_SOURCE.format(length=length)))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_changing_a_global_read_by_the_kernel_source_misses_the_disk_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)
    sources = tmp_path / "src"
    sources.mkdir()
    first = _fresh_module(sources, "fk_cache_kernel", 16)
    assert [tuple(p.shape) for p in first.copy_kernel(0).params] == [(16,), (16,)]
    # Same file name and builder, the global changed: a new process must not get the
    # 16-element kernel back from the front-end memo.
    second = _fresh_module(sources, "fk_cache_kernel", 32)
    assert [tuple(p.shape) for p in second.copy_kernel(0).params] == [(32,), (32,)]
    # And the unchanged source still hits the memo written for it.
    third = _fresh_module(sources, "fk_cache_kernel", 32)
    assert third.copy_kernel(0).cache_key == second.copy_kernel(0).cache_key


ISSUE_SOURCE = """
import tl_jit
import tl_jit.language as T

{global_line}


@tl_jit.jit(out_idx=[1], target="c")
def copy_kernel(N):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(8):
                Y[i] = X[i]

    return main
"""


def _issue_module(directory: Path, global_line: str) -> types.ModuleType:
    name = "fk_issue_kernel"
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(ISSUE_SOURCE.format(global_line=global_line)))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_a_module_global_named_like_a_builder_argument(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tl_jit.keys import frontend_key

    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)
    sources = tmp_path / "src"
    sources.mkdir()
    with_global = _issue_module(sources, "N = 16")
    assert [tuple(p.shape) for p in with_global.copy_kernel(64).params] == [(64,), (64,)]
    key_with = frontend_key(with_global.copy_kernel.func, {"N": 64}, {"target": "c"})
    without_global = _issue_module(sources, "")
    key_without = frontend_key(without_global.copy_kernel.func, {"N": 64}, {"target": "c"})
    # N in the annotation is the builder's argument: the module global is not read.
    assert key_with == key_without
    assert [tuple(p.shape) for p in without_global.copy_kernel(64).params] == [(64,), (64,)]
