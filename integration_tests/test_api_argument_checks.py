"""Public tl_jit calls refuse a wrong argument by name before any work (they failed
with an AttributeError, a TVM check failure, an errno, or every autotune configuration
failing, or exported into the kernel's own cache entry)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

import tl_ir.language as T
import tl_jit


def _kernel() -> Any:
    @T.prim_func
    def bump(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=1) as _:
            for i in T.serial(4):
                A[i] = A[i] + 1

    return bump


@pytest.mark.parametrize("configs", [5, [("tl.disable_tma_lower", True)]])
def test_pass_configs_that_are_no_dict_are_refused(configs: Any) -> None:
    with pytest.raises(TypeError, match="pass_configs: expected a dict of option names"):
        tl_jit.compile(_kernel(), target="c", pass_configs=configs)


def test_par_compile_of_a_lone_prim_func_is_refused() -> None:
    with pytest.raises(TypeError, match=r"expected a list of PrimFuncs, got a PrimFunc"):
        tl_jit.par_compile(_kernel())
    with pytest.raises(TypeError, match=r"par_compile funcs\[1\]: expected a PrimFunc, got a int"):
        tl_jit.par_compile([_kernel(), 3])


@pytest.mark.parametrize("workers", [1.5, True, 0])
def test_autotune_max_workers_is_checked_up_front(workers: Any) -> None:
    with pytest.raises(ValueError, match="autotune max_workers: expected an int >= 1 or None"):
        tl_jit.autotune(configs=[{}], max_workers=workers)


def test_export_paths_are_checked(tmp_path: Path) -> None:
    kernel = tl_jit.compile(_kernel(), target="c")
    with pytest.raises(TypeError, match="export path: expected a directory as a str"):
        kernel.export(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="export path: expected a directory name, got ''"):
        kernel.export("")
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(FileExistsError, match=r"a_file' is a file, not a directory"):
        kernel.export(tmp_path / "a_file" / "artifact")
    entry = Path(kernel.artifact_dir)
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in [entry, *entry.iterdir()]}
    for inside in (entry, entry / "sub"):
        with pytest.raises(FileExistsError, match="expected a place outside the artifact"):
            kernel.export(inside, force=True)
    assert {p: stat.S_IMODE(p.stat().st_mode) for p in [entry, *entry.iterdir()]} == modes
    assert os.listdir(entry) and not (entry / "sub").exists()


@pytest.mark.parametrize("flag", ["skip_check", "cache_results"])
def test_autotune_flags_must_be_bools(flag: str) -> None:
    # Taken by truth, skip_check="no" skipped the check against ref_prog.
    with pytest.raises(TypeError, match=rf"autotune\({flag}=...\): expected a bool, got 'no'"):
        tl_jit.autotune(configs=[{}], **{flag: "no"})


def test_profiler_arguments_are_checked_by_name() -> None:
    # do_bench(5) said "'int' object is not callable", do_bench(inputs=5) "not iterable".
    profiler = tl_jit.compile(_kernel(), target="c").get_profiler()
    with pytest.raises(TypeError, match=r"Profiler.do_bench\(func\): expected a function"):
        profiler.do_bench(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Profiler.run_once\(func\): expected a function"):
        profiler.run_once(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"assert_allclose\(ref_fn\): expected a function"):
        profiler.assert_allclose(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"do_bench\(inputs=...\): expected a list or tuple"):
        profiler.do_bench(inputs=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("host", [7, "zzz"])
def test_a_bad_target_host_is_named(host: Any) -> None:
    # The refusal said "target: ..." although the target was right.
    with pytest.raises(ValueError, match=r"^target_host: "):
        tl_jit.compile(_kernel(), target="c", target_host=host)


@T.prim_func
def _int8_atomics(A: T.Tensor((8,), "int8"), B: T.Tensor((8,), "int8")):
    with T.Kernel(2, threads=1):
        for i in T.serial(8):
            T.atomic_add(B[i], A[i])


def test_a_refusal_raised_while_lowering_names_the_kernel_and_its_file() -> None:
    """A pass's refusal (an int8 atomic on the CPU) named the buffer but no kernel or
    file: the pass knows the IR, not the source. A note adds both."""
    with pytest.raises(ValueError, match="atomic_add on B: dtype int8") as caught:
        tl_jit.compile(_int8_atomics, target="c")
    notes = getattr(caught.value, "__notes__", [])
    assert notes == [f"while lowering kernel '_int8_atomics' of {__file__}"], notes
