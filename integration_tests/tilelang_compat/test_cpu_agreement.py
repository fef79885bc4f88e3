"""The ``c`` and ``llvm`` targets agree bit for bit on every deterministic corpus program.

Both CPU targets lower the same IR, so a difference between them is a code generation
bug on one of them (the test exists because a persistent GEMM once looked right on one
target and NaN on the other; that one turned out to be an output the program never
writes, which the poisoned outputs here now catch on both targets). Outputs are
pre-filled with a poison value rather than allocated, so allocator reuse cannot make an
unwritten element look right. Programs whose result depends on thread timing (float
atomics from several blocks, whose order differs between runs) are listed in
`NONDETERMINISTIC` with the reason and compared with the reference only. Programs
whose float results round differently on the two targets for a known, legitimate
reason (a transcendental function, `TRANSCENDENTALS`, or one listed in `ROUNDING`)
are compared with each other within the case's tolerance instead of bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from integration_tests.tilelang_compat.harness import run_with_poisoned_outputs
from integration_tests.tilelang_compat.registry import ALL_CASES, EXPECTED_FAILURES
from integration_tests.tilelang_compat.survey import construct_names

NONDETERMINISTIC: dict[str, str] = {
    "example_gemm_splitk.matmul": "split-K blocks add their float partials with T.atomic_add in run-time order",
    "example_gemm_splitk_vectorize_atomicadd.matmul": "as example_gemm_splitk.matmul",
    "example_gemm_streamk.tl_matmul_streamk": (
        "the stream-k blocks that share an output tile add their float partials with "
        "T.atomic_add in run-time order"
    ),
    "example_topk_selector.tl_topk_impl": (
        "each row's indices land in the slots the threads claim with "
        "T.atomic_add(..., return_prev=True), in run-time order (compared as sorted rows)"
    ),
}
"""Cases excluded from the bit-for-bit comparison, with why their result varies."""

_FMA = (
    "gcc contracts a * b + c into one fused multiply-add (C's default in GNU mode) where "
    "TVM's LLVM code keeps the two roundings"
)
ROUNDING: dict[str, str] = {
    "example_flash_attention.flashattn": (
        f"exp comes from different implementations (libm or the C vector exp against "
        f"LLVM's), and {_FMA}: up to 26 float16 ulps on outputs near zero"
    ),
    "example_flash_attention.flashattn-causal": "as example_flash_attention.flashattn",
    "example_layernorm._layernorm_fwd": (
        f"{_FMA}; the variance sumsq / D - mean * mean cancels, so rstd differs by 2 ulps "
        "and outputs near zero by more"
    ),
}
"""Deterministic cases whose c and llvm results differ in rounding, with why (besides
the programs `TRANSCENDENTALS` covers)."""

TRANSCENDENTALS = frozenset({"exp", "exp2", "log", "log2", "rsqrt", "sqrt", "tanh", "sigmoid"})
"""``T.`` functions the two targets evaluate with different code (C's inlined vector
approximation or libm against LLVM's lowering): a program using one rounds differently
in the last bits and is compared within its tolerance."""


def rounding_reason(name: str) -> str | None:
    """Why ``name``'s c and llvm results may differ in rounding (None: bit for bit)."""
    if name in ROUNDING:
        return ROUNDING[name]
    used = sorted(construct_names(name) & TRANSCENDENTALS)
    if used:
        return f"uses {', '.join('T.' + n for n in used)}, evaluated by different code on each"
    return None


def _agreement_cases() -> list[object]:
    params = []
    for name, case in ALL_CASES.items():
        if (name, "c") in EXPECTED_FAILURES or (name, "llvm") in EXPECTED_FAILURES:
            continue
        marks = [pytest.mark.slow] if "slow" in case.tags else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "agreement-cache"))
    monkeypatch.delenv("TL_DISABLE_CACHE", raising=False)


@pytest.mark.parametrize("name", _agreement_cases())
def test_c_and_llvm_agree_bit_for_bit(name: str) -> None:
    case = ALL_CASES[name]
    on_c = run_with_poisoned_outputs(case, "c")
    on_llvm = run_with_poisoned_outputs(case, "llvm")
    if name in NONDETERMINISTIC:
        return  # both matched the reference; their bits may differ run to run
    if rounding_reason(name) is not None:
        for index, (a, b) in enumerate(zip(on_c, on_llvm, strict=True)):
            np.testing.assert_allclose(
                a.astype(np.float64),
                b.astype(np.float64),
                rtol=case.rtol,
                atol=case.atol,
                err_msg=f"{name}: output {index}",
            )
        return
    for index, (a, b) in enumerate(zip(on_c, on_llvm, strict=True)):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{name}: output {index}"
        differ = np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8) != np.frombuffer(
            np.ascontiguousarray(b).tobytes(), np.uint8
        )
        assert not differ.any(), (
            f"{name}: output {index} differs between c and llvm in "
            f"{int(differ.sum())} of {differ.size} bytes"
        )


def test_excluded_entries_name_cases() -> None:
    for name in (*NONDETERMINISTIC, *ROUNDING):
        assert name in ALL_CASES, name


def test_poisoned_outputs_catch_an_unwritten_tile() -> None:
    """The hand-written persistent tile loop skips tiles when the N-tile count is not a
    multiple of its group size; with poisoned outputs that is a failure, not luck."""
    import dataclasses

    case = ALL_CASES["example_gemm_persistent.matmul_persistent-tile-loop"]
    uncovered = dataclasses.replace(case, args={**case.args, "N": 96})  # 3 N-tiles
    with pytest.raises(AssertionError, match="output 0"):
        run_with_poisoned_outputs(uncovered, "c")
