"""One table of call cases, fed to the three implementations of the argument-check plan.

The Python checker (``ArgumentChecker.prepare``), the generated numpy fast path (the
``tvm_ffi`` adapter; torch tensors take the Cython launcher's checks there) and the
Cython launcher (the ``cython`` adapter) all consume the kernel's ``CallPlan``. Each case
must get the same decision on every path: accepted (with the reference result) or
refused with the same exception type and message. Cases marked ``fast`` must be accepted
without the Python checker on the paths named; no path may accept a case the checker
refuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import runtime_kernels as rk
from numpy.lib.stride_tricks import as_strided

import tl_runtime
from tl_runtime.checking import ArgumentChecker

torch = pytest.importorskip("torch")
ml_dtypes = pytest.importorskip("ml_dtypes")

OUT_IDX = {"vadd_n": (2,), "axpb": (1,), "int_mix": (2,)}


def _f32(n: int = 1024, offset: int = 0, value: float = 1.0) -> Any:
    array = rk.aligned_array(np, (n,), "float32", offset)
    array[...] = value
    return array


def _readonly(array: Any) -> Any:
    array.flags.writeable = False
    return array


def _overlapping() -> tuple[Any, Any, Any]:
    raw = _f32(2048)
    return raw[:1024], _f32(), raw[:1024]


def _structured_rows() -> Any:
    """A (4, 8) float32 field view of a structured array: byte strides (5 * 8 ... , 5)."""
    record = np.zeros((4, 8), dtype=[("x", np.float32), ("tag", np.int8)])
    record["x"] = 1.0
    return record["x"], _f32(32).reshape(4, 8)


def _fake_tensor() -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return torch.empty(1024)


def _torch_neg_input() -> tuple[Any, Any, Any]:
    base = torch.arange(1024, dtype=torch.float32)
    return base._neg_view(), torch.ones(1024), torch.zeros(1024)


@dataclass
class Case:
    """One call: kernel, argument builder, whether the checker accepts, the fast paths."""

    name: str
    kernel: str
    args: Callable[[], tuple[Any, ...]]
    accepted: bool
    fast: tuple[str, ...] = ()  # adapters whose fast path must accept it without the checker
    reference: Callable[[tuple[Any, ...]], Any] | None = None
    message: str = ""  # a part of the refusal every path must give
    params: list[str] = field(default_factory=list)


def _sum_into_c(args: tuple[Any, ...]) -> Any:
    a, b, c = (
        np.asarray(x) if not isinstance(x, torch.Tensor) else x.resolve_neg().numpy() for x in args
    )
    return c, a + b


CASES = [
    Case(
        "numpy aligned",
        "vadd_elem",
        lambda: (_f32(), _f32(), _f32(value=0)),
        True,
        ("tvm_ffi", "cython"),
        _sum_into_c,
    ),
    Case(
        "numpy 4 bytes past 64",
        "vadd_elem",
        lambda: (_f32(offset=4), _f32(offset=4), _f32(offset=4, value=0)),
        True,
        ("tvm_ffi", "cython"),
        _sum_into_c,
    ),
    Case(
        "torch tensors",
        "vadd_elem",
        lambda: (torch.ones(1024), torch.ones(1024), torch.zeros(1024)),
        True,
        ("tvm_ffi", "cython"),
        _sum_into_c,
    ),
    Case(
        "memoryview input",
        "vadd_elem",
        lambda: (memoryview(_f32()), _f32(), _f32(value=0)),
        True,
        ("cython",),
    ),
    Case(
        "read-only input (copied)",
        "vadd_elem",
        lambda: (_readonly(_f32()), _f32(), _f32(value=0)),
        True,
        (),
        _sum_into_c,
    ),
    Case("torch neg-bit input (resolved)", "vadd_elem", _torch_neg_input, True, (), _sum_into_c),
    Case(
        "wrong dtype",
        "vadd_elem",
        lambda: (_f32().astype(np.float64), _f32(), _f32()),
        False,
        message="'A': expected dtype float32, got float64",
    ),
    Case(
        "wrong shape",
        "vadd_elem",
        lambda: (_f32(1023), _f32(), _f32()),
        False,
        message="'A': expected dim 0 = 1024, got 1023",
    ),
    Case(
        "wrong rank",
        "vadd_elem",
        lambda: (_f32().reshape(32, 32), _f32(), _f32()),
        False,
        message="'A': expected rank 1",
    ),
    Case(
        "not contiguous",
        "vadd_elem",
        lambda: (_f32(2048)[::2], _f32(), _f32()),
        False,
        message="'A': expected a C-contiguous array",
    ),
    Case(
        "read-only output",
        "vadd_elem",
        lambda: (_f32(), _f32(), _readonly(_f32())),
        False,
        message="'C': expected a writable array",
    ),
    Case(
        "misaligned output",
        "vadd_elem",
        lambda: (_f32(), _f32(), rk.aligned_array(np, (4097,), "uint8", 0)[1:].view(np.float32)),
        False,
        message="'C': expected data aligned to 4 bytes",
    ),
    Case(
        "byte-swapped",
        "vadd_elem",
        lambda: (_f32().astype(">f4"), _f32(), _f32()),
        False,
        message="'A': expected float32 in native",
    ),
    Case(
        "not an array",
        "vadd_elem",
        lambda: ([1.0] * 1024, _f32(), _f32()),
        False,
        message="'A': expected an array supporting DLPack",
    ),
    Case(
        "too few arguments",
        "vadd_elem",
        lambda: (_f32(), _f32()),
        False,
        message="takes 3 argument(s), got 2",
    ),
    Case(
        "output overlaps input",
        "vadd_elem",
        _overlapping,
        False,
        message="'C': expected memory shared with no other parameter",
    ),
    Case(
        "torch neg-bit output",
        "vadd_elem",
        lambda: (torch.ones(1024), torch.ones(1024), torch.zeros(1024)._neg_view()),
        False,
        message="'C': expected a tensor whose memory",
    ),
    Case(
        "torch output requiring grad",
        "vadd_elem",
        lambda: (torch.ones(1024), torch.ones(1024), torch.zeros(1024, requires_grad=True)),
        False,
        message="'C': expected a tensor that does not require grad",
    ),
    Case(
        "torch sparse",
        "vadd_elem",
        lambda: (torch.ones(1024).to_sparse(), torch.ones(1024), torch.zeros(1024)),
        False,
        message="'A': expected a dense (strided) torch tensor",
    ),
    Case(
        "torch quantized",
        "vadd_elem",
        lambda: (
            torch.quantize_per_tensor(torch.ones(1024), 0.1, 0, torch.quint8),
            torch.ones(1024),
            torch.zeros(1024),
        ),
        False,
        message="'A': expected a tensor of float32, got a quantized",
    ),
    Case(
        "torch complex",
        "vadd_elem",
        lambda: (torch.ones(1024, dtype=torch.complex64), torch.ones(1024), torch.zeros(1024)),
        False,
        message="'A': expected dtype float32, got complex64",
    ),
    Case(
        "torch zero tensor",
        "vadd_elem",
        lambda: (torch._efficientzerotensor(1024), torch.ones(1024), torch.zeros(1024)),
        False,
        message="'A': expected a tensor with memory",
    ),
    Case(
        "torch fake tensor",
        "vadd_elem",
        lambda: (_fake_tensor(), torch.ones(1024), torch.zeros(1024)),
        False,
        message="'A': expected a tensor with memory",
    ),
    Case(
        "torch functional tensor",
        "vadd_elem",
        lambda: (
            torch._to_functional_tensor(torch.ones(1024)),
            torch.ones(1024),
            torch.zeros(1024),
        ),
        False,
        message="'A': expected a tensor with memory",
    ),
    Case(
        "torch nested tensor",
        "vadd_elem",
        lambda: (
            torch.nested.nested_tensor([torch.ones(1024), torch.ones(512)]),
            torch.ones(1024),
            torch.zeros(1024),
        ),
        False,
        message="'A': expected a tensor of one shape, got a nested torch tensor",
    ),
    Case(
        "torch bfloat16 for float32",
        "vadd_elem",
        lambda: (torch.ones(1024, dtype=torch.bfloat16), torch.ones(1024), torch.zeros(1024)),
        False,
        message="'A': expected dtype float32, got bfloat16",
    ),
    Case(
        "ml_dtypes bfloat16 for float32",
        "vadd_elem",
        lambda: (_f32().astype(ml_dtypes.bfloat16), _f32(), _f32()),
        False,
        message="'A': expected dtype float32, got bfloat16",
    ),
    Case("symbolic dims", "vadd_n", lambda: (_f32(100), _f32(100)), True, ("tvm_ffi", "cython")),
    Case(
        "symbolic dims disagree",
        "vadd_n",
        lambda: (_f32(100), _f32(99)),
        False,
        message="'B': expected dim 0 = n = 100 (bound by parameter 'A'), got 99",
    ),
    Case("zero-size", "vadd_n", lambda: (_f32(0), _f32(0)), True),
    Case(
        "declared strides",
        "strided_rows",
        lambda: (_f32(64).reshape(4, 16)[:, :8], _f32(32).reshape(4, 8)),
        True,
        ("tvm_ffi", "cython"),
    ),
    Case(
        "byte stride not whole elements",
        "strided_rows",
        _structured_rows,
        False,
        message="'A': expected byte strides that are whole multiples of the element size",
    ),
    Case(
        "stride-0 dim of 2**31",
        "strided_rows",
        lambda: (as_strided(_f32(8), (2**31, 8), (0, 4)), _f32(32).reshape(4, 8)),
        False,
        message="'A': expected dims of at most 2147483647 elements",
    ),
    Case(
        "scalars in range",
        "int_mix",
        lambda: (np.ones((2, 3), np.int8), np.ones(3, np.uint16), 5, True),
        True,
        ("tvm_ffi", "cython"),
    ),
    Case(
        "numpy int scalar",
        "int_mix",
        lambda: (np.ones((2, 3), np.int8), np.ones(3, np.uint16), np.int64(5), False),
        True,
    ),
    Case(
        "int scalar out of range",
        "int_mix",
        lambda: (np.ones((2, 3), np.int8), np.ones(3, np.uint16), 2**63, True),
        False,
        message="'shift': expected an int in [-9223372036854775808, 9223372036854775807]",
    ),
    Case(
        "int for bool",
        "int_mix",
        lambda: (np.ones((2, 3), np.int8), np.ones(3, np.uint16), 1, 1),
        False,
        message="'flag': expected a bool scalar, got int",
    ),
    Case(
        "float32 scalar out of range",
        "axpb",
        lambda: (_f32(64), 1e39, 1),
        False,
        message="'alpha': expected a value representable as float32, got 1e+39",
    ),
    Case("int for a float scalar", "axpb", lambda: (_f32(64), 2, 1), True),
]


def _outcome(call: Callable[[], Any]) -> tuple[str, str]:
    try:
        call()
    except (TypeError, ValueError) as exc:
        # Addresses differ between calls (each builds new arrays); the rest must not.
        return type(exc).__name__, re.sub(r"0x[0-9a-f]+", "0x?", str(exc))
    return "accepted", ""


def _count_full_checks(kernel: Any) -> list[int]:
    """Make the kernel's full checker count its calls (its fast path never calls it)."""
    checker = kernel._impl.checker
    calls = [0]
    prepare = checker.prepare

    def counting(args: Any) -> Any:
        calls[0] += 1
        return prepare(args)

    checker.prepare = counting
    return calls


@pytest.fixture(scope="module")
def kernels() -> dict[tuple[str, str], Any]:
    names = {case.kernel for case in CASES}
    return {
        (name, adapter): tl_runtime.load(
            rk.cached_artifact(name, **({"out_idx": OUT_IDX[name]} if name in OUT_IDX else {})),
            adapter=adapter,
        )
        for name in names
        for adapter in ("tvm_ffi", "cython")
    }


def _directory(name: str) -> Path:
    return rk.cached_artifact(name, **({"out_idx": OUT_IDX[name]} if name in OUT_IDX else {}))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_every_path_decides_alike(case: Case, kernels: dict[tuple[str, str], Any]) -> None:
    checker = ArgumentChecker(tl_runtime.read_manifest(_directory(case.kernel)))
    expected = _outcome(lambda: checker.prepare(case.args()))
    assert (expected[0] == "accepted") == case.accepted, expected
    assert case.message in expected[1]
    for adapter in ("tvm_ffi", "cython"):
        kernel = kernels[(case.kernel, adapter)]
        full_checks = _count_full_checks(kernel)
        args = case.args()
        outcome = _outcome(lambda kernel=kernel, args=args: kernel(*args))
        assert outcome == expected, f"{adapter} decides otherwise than the checker"
        if adapter in case.fast:
            assert full_checks[0] == 0, f"{adapter}: the fast path declined {case.name}"
        if case.reference is not None:
            have, want = case.reference(args)
            np.testing.assert_array_equal(have, want)
    # Messages name the parameter (or, for the count, the signature).
    if not case.accepted:
        assert "parameter '" in expected[1] or "argument(s)" in expected[1]


def test_the_cython_launch_never_rounds_a_byte_stride(kernels: dict[tuple[str, str], Any]) -> None:
    """Even past the checker, the launcher refuses a stride between elements by name."""
    launcher = kernels[("strided_rows", "cython")]._impl.launcher
    a, c = _structured_rows()
    with pytest.raises(ValueError, match="parameter 'A': expected byte strides that are whole"):
        launcher.launch_prepared([a, c])
