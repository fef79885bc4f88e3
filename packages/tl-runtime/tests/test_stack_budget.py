"""Stack budget pieces: the manifest's stack_bytes, OMP_STACKSIZE parsing, the load check.

End-to-end runs under small stacks (child processes, c and llvm) are in
packages/tl-codegen-cpu/tests/test_stack_budget.py.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

import tl_runtime
from tl_runtime import Manifest, ParamSpec, StackBudgetError, stack_budget
from tl_runtime.context import stack_left_function, team_stack_bytes


def _manifest(stack_bytes: int = 0) -> Manifest:
    return Manifest(
        name="scan",
        entry_symbol="scan",
        params=(ParamSpec("A", "float32", shape=(4,)),),
        target={"kind": "c"},
        library="k.so",
        stack_bytes=stack_bytes,
    )


def test_stack_bytes_round_trips_and_defaults_to_zero(tmp_path: Path) -> None:
    tl_runtime.write_artifact(tmp_path, _manifest(stack_bytes=4096), {"k.so": b"x"})
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["stack_bytes"] == 4096
    assert tl_runtime.read_manifest(tmp_path).stack_bytes == 4096
    del data["stack_bytes"]  # an artifact written before the field existed
    (tmp_path / "manifest.json").write_text(json.dumps(data))
    assert tl_runtime.read_manifest(tmp_path, verify=False).stack_bytes == 0


@pytest.mark.parametrize("value", [-1, 1.5, "4096", True, None, 1 << 41])
def test_invalid_stack_bytes_are_refused(value: object) -> None:
    with pytest.raises(tl_runtime.ArtifactError, match="stack_bytes"):
        _manifest(stack_bytes=value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512k", 512 << 10),
        ("512", 512 << 10),
        (" 2 M ", 2 << 20),
        ("1G", 1 << 30),
        ("4096B", 4096),
        ("8m", 8 << 20),
        ("", None),
        ("12x", None),
        ("-1k", None),
        ("1.5M", None),
    ],
)
def test_stack_sizes_parse_as_openmp_does(text: str, expected: int | None) -> None:
    assert stack_budget.parse_stack_size(text) == expected


def test_omp_stacksize_wins_over_gomp_stacksize(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOMP_STACKSIZE", "4M")
    monkeypatch.setenv("OMP_STACKSIZE", "512k")
    assert stack_budget.openmp_worker_stack() == (512 << 10, "OMP_STACKSIZE=512k")
    monkeypatch.setenv("OMP_STACKSIZE", "bogus")  # ignored, as OpenMP ignores it
    assert stack_budget.openmp_worker_stack() == (4 << 20, "GOMP_STACKSIZE=4M")


def test_load_check_refuses_a_need_beyond_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_STACKSIZE", "512k")
    with pytest.raises(StackBudgetError, match=r"'scan' keeps 524288 bytes.*OMP_STACKSIZE=1M"):
        stack_budget.check_worker_stacks(_manifest(stack_bytes=512 << 10))
    stack_budget.check_worker_stacks(_manifest(stack_bytes=256 << 10))  # fits with the margin
    stack_budget.check_worker_stacks(_manifest())  # nothing on the stack: nothing to check


def test_load_check_raises_the_helper_team_stacks_to_the_need(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if stack_left_function() is None:
        pytest.skip("the C context helper is unavailable")
    monkeypatch.setenv("OMP_STACKSIZE", "64M")
    stack_budget.check_worker_stacks(_manifest(stack_bytes=3 << 20))
    assert team_stack_bytes() >= (3 << 20) + stack_budget.STACK_MARGIN_BYTES


def test_calls_from_a_short_stack_run_on_a_thread_with_enough() -> None:
    stack_left = stack_left_function()
    if stack_left is None:
        pytest.skip("the C context helper is unavailable")
    seen: list[tuple[str, int]] = []

    def call(tag: str) -> str:
        seen.append((threading.current_thread().name, stack_left()))
        return tag

    need = 4 << 20
    guarded = stack_budget.guard_calling_thread_stack(
        _manifest(stack_bytes=need - stack_budget.STACK_MARGIN_BYTES), call
    )
    assert stack_budget.guard_calling_thread_stack(_manifest(), call) is call
    results: list[str] = []
    threading.stack_size(1 << 20)
    try:
        worker = threading.Thread(target=lambda: results.append(guarded("x")), name="short")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(0)
    assert results == ["x"]
    name, left = seen[0]
    assert name.startswith("tl-big-stack") and left >= need


def test_a_forked_child_gets_its_own_big_stack_thread() -> None:
    import multiprocessing

    stack_left = stack_left_function()
    if stack_left is None:
        pytest.skip("the C context helper is unavailable")
    # Start the parent's runtime thread for a need no thread here has left.
    stack_budget._big_stack_executor(64 << 20).submit(int).result()
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        result = pool.apply_async(_child_uses_big_stack_thread)
        assert result.get(timeout=60) is True


def _child_uses_big_stack_thread() -> bool:
    executor = stack_budget._big_stack_executor(64 << 20)
    name = executor.submit(lambda: threading.current_thread().name).result(timeout=30)
    return name.startswith("tl-big-stack")
