"""``tl_jit.testing``: TileLang's ``tilelang.testing`` names for ported test files."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tl_jit.testing as testing
from tl_backend_api import list_backends


def _cuda_device_here() -> bool:
    return any("cuda" in b.target_kinds and b.device_present() for b in list_backends())


def test_kind_marks_follow_the_device_probes() -> None:
    assert testing.requires_llvm.args == (False,)  # the host backend always finds its CPU
    assert testing.requires_target("c").args == (False,)
    assert testing.requires_cuda.args == (not _cuda_device_here(),)
    vulkan = testing.requires_target("no-such-kind")
    assert vulkan.args == (True,) and "no installed backend serves" in vulkan.kwargs["reason"]


def _a_test() -> None:
    pass


def test_compute_version_marks() -> None:
    decorated = testing.requires_cuda_compute_version_ge(1, 0)(_a_test)
    assert decorated.pytestmark[-1].args == (not _cuda_device_here(),)
    never = testing.requires_cuda_compute_version_lt(0, 0)(_a_test)
    assert never.pytestmark[-1].args == (True,)
    with pytest.raises(ValueError, match="mode: expected one of"):
        testing.requires_cuda_compute_version(8, 0, mode="newer")
    host = testing.requires_compute_version("llvm", 0, 0)(_a_test)
    assert host.pytestmark[-1].args == (True,)  # a CPU reports no compute version


def test_package_marks_and_missing_names() -> None:
    assert testing.requires_package("numpy").args == (False,)
    missing = testing.requires_package("numpy", "no_such_package_here")
    assert missing.args == (True,) and "no_such_package_here" in missing.kwargs["reason"]
    with pytest.raises(AttributeError, match="performance-regression harness"):
        testing.process_func  # noqa: B018
    unknown = testing.requires_nothing  # a kind no backend serves: skipped, saying so
    assert unknown.args == (True,) and "'nothing'" in unknown.kwargs["reason"]
    with pytest.raises(AttributeError, match="no attribute 'not_a_mark'"):
        testing.not_a_mark  # noqa: B018


def test_set_random_seed_repeats_every_generator() -> None:
    torch = pytest.importorskip("torch")
    testing.set_random_seed(3)
    first = (random.random(), np.random.rand(), float(torch.rand(())))
    testing.set_random_seed(3)
    assert (random.random(), np.random.rand(), float(torch.rand(()))) == first


def test_main_runs_the_calling_file(tmp_path: Path) -> None:
    ported = tmp_path / "test_ported.py"
    ported.write_text(
        textwrap.dedent(
            """
            import tl_jit as tilelang
            import tl_jit.testing


            def test_runs():
                assert tilelang.testing.torch_assert_close is not None


            @tilelang.testing.requires_llvm
            def test_on_the_host():
                pass


            @tilelang.testing.requires_target("no-such-kind")
            def test_never():
                raise AssertionError("must be skipped")


            if __name__ == "__main__":
                tilelang.testing.main()
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(ported), "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 1 skipped" in done.stdout
