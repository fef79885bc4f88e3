"""Stack budget: kernels whose blocks keep tiles on the stack never crash the process.

Each kernel runs in a child process under a small ``OMP_STACKSIZE`` or ``ulimit -s``
(a regression kills the child with SIGSEGV, not pytest): it either computes the right
answer or is refused with `tl_runtime.StackBudgetError` naming the kernel, the need and
what to set.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tl_ir.language as T
from tl_backend_api import build_artifact, create_backend_context

_CHILD = Path(__file__).parent / "stack_budget_child.py"
_COLS = 512  # one 2 KiB float32 row per tile row


def row_scan(rows: int, block_rows: int) -> Any:
    """A prefix sum along each row through one (block_rows, 512) float32 tile per block.

    The scan's loop-carried reads keep the tile a real array (nothing forwards it away).
    """

    @T.prim_func
    def main(A: T.Tensor((rows, _COLS), "float32"), C: T.Tensor((rows, _COLS), "float32")):
        with T.Kernel(T.ceildiv(rows, block_rows), threads=128) as by:
            tile = T.alloc_fragment((block_rows, _COLS), "float32")
            T.copy(A[by * block_rows, 0], tile)
            for i in T.serial(block_rows):
                for j in T.serial(_COLS - 1):
                    tile[i, j + 1] = tile[i, j + 1] + tile[i, j]
            T.copy(tile, C[by * block_rows, 0])

    return main


class _Artifacts:
    """(target, tile KiB, grid) -> artifact directory, built on first use.

    Serial grids have one block, parallel ones four.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.built: dict[tuple[str, int, str], Path] = {}

    def __getitem__(self, key: tuple[str, int, str]) -> Path:
        if key not in self.built:
            target, tile_kib, grid = key
            block_rows = tile_kib // 2
            rows = block_rows if grid == "serial" else block_rows * 4
            self.built[key] = build_artifact(
                create_backend_context(target),
                row_scan(rows, block_rows),
                self.root / f"{target}-{tile_kib}-{grid}",
                out_idx=[-1],
            )
        return self.built[key]


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> _Artifacts:
    """The row-scan artifacts of this module's tests."""
    return _Artifacts(tmp_path_factory.mktemp("stack_budget"))


def _run_child(
    artifact: Path,
    *,
    ulimit_kib: int = 0,
    env: dict[str, str] | None = None,
    small_stack_thread: int = 0,
) -> str:
    command = [sys.executable, str(_CHILD), str(artifact)]
    if small_stack_thread:
        command += ["--small-stack-thread", str(small_stack_thread)]
    line = shlex.join(command)
    if ulimit_kib:
        line = f"ulimit -s {ulimit_kib} && {line}"
    child_env = {
        k: v for k, v in os.environ.items() if k not in ("OMP_STACKSIZE", "GOMP_STACKSIZE")
    }
    # Two threads that sleep when idle: a parallel grid still uses worker threads, and
    # spinning workers on a loaded machine make each child take seconds.
    child_env.update({"OMP_NUM_THREADS": "2", "OMP_WAIT_POLICY": "passive"})
    child_env.update(env or {})
    result = subprocess.run(
        ["bash", "-c", line], env=child_env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, (
        f"child exited with {result.returncode} (a negative status is a signal: "
        f"-11 = SIGSEGV): {result.stderr[-2000:]}"
    )
    return result.stdout.strip().splitlines()[-1]


def test_manifest_records_the_stack_arrays_of_a_block(
    artifacts: _Artifacts,
) -> None:
    def stack_bytes(key: tuple[str, int, str]) -> Any:
        return json.loads((artifacts[key] / "manifest.json").read_text())["stack_bytes"]

    assert stack_bytes(("c", 512, "parallel")) == 512 << 10
    assert stack_bytes(("c", 1024, "parallel")) == 1024 << 10
    assert stack_bytes(("llvm", 1024, "parallel")) == 0  # llvm tiles are heap workspaces


def test_small_omp_stacksize_is_refused_at_load_naming_kernel_need_and_variable(
    artifacts: _Artifacts,
) -> None:
    for grid in ("serial", "parallel"):
        outcome = _run_child(artifacts[("c", 512, grid)], env={"OMP_STACKSIZE": "512k"})
        assert outcome.startswith("refused StackBudgetError"), outcome
        assert "'main'" in outcome and "524288 bytes" in outcome
        assert "OMP_STACKSIZE=512k" in outcome and "OMP_STACKSIZE=1M" in outcome


@pytest.mark.parametrize("grid", ["serial", "parallel"])
def test_tiles_that_fit_run_under_ulimit_1024(artifacts: _Artifacts, grid: str) -> None:
    assert _run_child(artifacts[("c", 512, grid)], ulimit_kib=1024) == "ok"


def test_budget_sized_tiles_under_ulimit_1024_are_refused_or_run_never_crash(
    artifacts: _Artifacts,
) -> None:
    artifact = artifacts[("c", 1024, "parallel")]
    # The workers' default stack follows `ulimit -s`: refused, naming the variable.
    outcome = _run_child(artifact, ulimit_kib=1024)
    assert outcome.startswith("refused StackBudgetError"), outcome
    assert "ulimit -s" in outcome and "OMP_STACKSIZE=2M" in outcome
    # With the suggested OMP_STACKSIZE the workers fit; the 1 MiB main thread does not,
    # so the call runs on a runtime thread with a large enough stack.
    assert _run_child(artifact, ulimit_kib=1024, env={"OMP_STACKSIZE": "2M"}) == "ok"


def test_a_calling_thread_with_a_small_stack_runs_the_kernel_elsewhere(
    artifacts: _Artifacts,
) -> None:
    for grid in ("serial", "parallel"):
        outcome = _run_child(artifacts[("c", 512, grid)], small_stack_thread=256 << 10)
        assert outcome == "ok"


@pytest.mark.parametrize("grid", [pytest.param("serial", marks=pytest.mark.slow), "parallel"])
def test_llvm_tiles_on_the_heap_run_under_both_limits(artifacts: _Artifacts, grid: str) -> None:
    artifact = artifacts[("llvm", 1024, grid)]
    assert _run_child(artifact, env={"OMP_STACKSIZE": "512k"}) == "ok"
    assert _run_child(artifact, ulimit_kib=1024) == "ok"
    assert _run_child(artifact, small_stack_thread=256 << 10) == "ok"
