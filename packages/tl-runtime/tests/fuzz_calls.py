"""The call-argument fuzz, run in a child process by test_fuzz_calls.py (a crash fails the test).

Run: python fuzz_calls.py ARTIFACTS_JSON EXAMPLES derandomize|random

``ARTIFACTS_JSON`` maps each kernel name of ``KERNELS`` to its artifact directory (built
by the parent with runtime_kernels, so this process needs only tl_runtime, numpy,
hypothesis and, optionally, torch). Each example draws a kernel, an adapter and one call:
arguments that are valid, or damaged in one or more ways (dtype, shape, rank, layout,
alignment, read-only, byte order, overlap with another argument, size beyond the index
width, byte strides that are not whole elements (a structured array's field), stride-0
broadcasts of every size class, another type, wrong count, scalars out of range or of the
wrong kind), some given as memoryviews or torch tensors: plain, lazily negated views
(torch's negative bit), or layouts no kernel takes (sparse, quantized, nested, lazily
zero, complex). The call must either return what numpy computes from
the same arguments or raise TypeError/ValueError naming a parameter of the kernel; a
call made only of valid arguments must succeed. Before each call the example is written
to stderr, so a crash names the example that caused it.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import tl_runtime

ADAPTERS = ("tvm_ffi", "cython")
DTYPES = ["float32", "float64", "int8", "uint16", "int32", "int64", "bool"]
INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


@dataclass
class Tensor:
    """One tensor parameter: name, dtype, shape (ints or symbol names), role, alignment."""

    name: str
    dtype: str
    shape: tuple[int | str, ...]
    role: str = "input"
    alignment: int = 64
    strides: tuple[int | str, ...] | None = None  # declared element strides (None: C order)


@dataclass
class Scalar:
    """One scalar parameter; ``valid`` draws values the kernel must accept."""

    name: str
    dtype: str


@dataclass
class Kernel:
    """A kernel of runtime_kernels, its caller params, and the numpy reference."""

    artifact: str
    params: list[Tensor | Scalar]
    out_idx: tuple[int, ...]
    reference: Callable[[dict[str, Any]], dict[str, Any]]
    tolerance: float = 0.0
    symbols: dict[str, list[int]] = field(default_factory=dict)


def _axpb(v: dict[str, Any]) -> dict[str, Any]:
    with np.errstate(all="ignore"):
        a = v["A"].astype(np.float32)
        return {"C": a * np.float32(v["alpha"]) + np.float32(v["k"])}


def _int_mix(v: dict[str, Any]) -> dict[str, Any]:
    shift = v["shift"] if v["flag"] else 0
    return {"C": v["A"].astype(np.int64) + v["B"].astype(np.int64) + np.int64(shift)}


KERNELS: dict[str, Kernel] = {
    "vadd_elem": Kernel(
        "vadd_elem",
        [
            Tensor("A", "float32", (1024,), alignment=4),
            Tensor("B", "float32", (1024,), alignment=4),
            Tensor("C", "float32", (1024,), "output", alignment=4),
        ],
        (),
        lambda v: {"C": v["A"] + v["B"]},
    ),
    "vadd_n": Kernel(
        "vadd_n",
        [Tensor("A", "float32", ("n",)), Tensor("B", "float32", ("n",))],
        (2,),
        lambda v: {"C": v["A"] + v["B"]},
        symbols={"n": [0, 1, 7, 64, 1000]},
    ),
    "scale_rows": Kernel(
        "scale_rows",
        [
            Tensor("A", "float32", ("m", 8), alignment=4),
            Tensor("C", "float32", ("m", 8), "output", alignment=4),
        ],
        (),
        lambda v: {"C": v["A"] * np.float32(2)},
        symbols={"m": [0, 1, 3, 33]},
    ),
    "sum_diff": Kernel(
        "sum_diff",
        [Tensor("A", "float64", (16, 8)), Tensor("B", "float64", (16, 8))],
        (2, 3),
        lambda v: {"S": v["A"] + v["B"], "D": v["A"] - v["B"]},
    ),
    "axpb": Kernel(
        "axpb",
        [Tensor("A", "float32", (64,)), Scalar("alpha", "float32"), Scalar("k", "int32")],
        (1,),
        _axpb,
        tolerance=1e-6,
    ),
    "accumulate": Kernel(
        "accumulate",
        [
            Tensor("A", "float32", (1024,), alignment=4),
            Tensor("X", "float32", (1024,), "inout", alignment=4),
        ],
        (),
        lambda v: {"X": v["X"] + v["A"]},
    ),
    "int_mix": Kernel(
        "int_mix",
        [
            Tensor("A", "int8", ("m", "n"), alignment=1),
            Tensor("B", "uint16", ("n",), alignment=2),
            Scalar("shift", "int64"),
            Scalar("flag", "bool"),
        ],
        (2,),
        _int_mix,
        symbols={"m": [0, 1, 5], "n": [1, 3, 64]},
    ),
    "strided_rows": Kernel(
        "strided_rows",
        [
            Tensor("A", "float32", ("m", 8), alignment=4, strides=("s", 1)),
            Tensor("C", "float32", ("m", 8), "output", alignment=4),
        ],
        (),
        lambda v: {"C": v["A"] * np.float32(2)},
        symbols={"m": [0, 1, 3, 33]},
    ),
}
OUTPUT_NAMES = {"vadd_n": ["C"], "sum_diff": ["S", "D"], "axpb": ["C"], "int_mix": ["C"]}


@dataclass
class Call:
    """One drawn call: the arguments, their numpy values, and whether all are valid."""

    kernel: str
    adapter: str
    args: list[Any]
    values: dict[str, Any]  # numpy copies of the tensors (or the scalars) before the call
    written: dict[str, Any]  # caller-passed written params: the array the kernel writes
    valid: bool
    damage: list[str]


def _aligned(shape: tuple[int, ...], dtype: str, offset: int = 0) -> Any:
    itemsize = np.dtype(dtype).itemsize
    count = int(np.prod(shape))
    raw = np.zeros(count * itemsize + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start : start + count * itemsize].view(dtype).reshape(shape)


def _fill(array: Any, rng: np.random.Generator) -> None:
    if array.size:
        if array.dtype == np.bool_:
            array[...] = rng.integers(0, 2, array.shape).astype(bool)
        else:
            array[...] = rng.integers(0, 100, array.shape).astype(array.dtype)


@st.composite
def calls(draw: st.DrawFn) -> Call:
    name = draw(st.sampled_from(sorted(KERNELS)))
    kernel = KERNELS[name]
    adapter = draw(st.sampled_from(ADAPTERS))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sizes = {s: draw(st.sampled_from(options)) for s, options in kernel.symbols.items()}
    damage: list[str] = []
    args: list[Any] = []
    values: dict[str, Any] = {}
    written: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    value: Any
    for param in kernel.params:
        if isinstance(param, Scalar):
            value, ok = draw(_scalars(param))
            if not ok:
                damage.append(f"{param.name}: scalar {value!r}")
            args.append(value)
            values[param.name] = value
            continue
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in param.shape)
        is_written = param.role != "input"
        mutation = draw(
            st.sampled_from(
                ["none"] * 6
                + [
                    "dtype",
                    "shape",
                    "rank",
                    "strided",
                    "offset",
                    "readonly",
                    "byteorder",
                    "overlap",
                    "huge",
                    "other",
                    "memoryview",
                    "torch",
                    "negview",
                    "torchlayout",
                    "fieldstride",
                    "broadcast",
                ]
            )
        )
        if param.strides is not None:
            # Declared row stride ``s`` (elements), drawn: rows 8, 9 or 16 elements apart.
            lead = draw(st.sampled_from([8, 9, 16]))
            itemsize = np.dtype(param.dtype).itemsize
            memory = _aligned((max(shape[0], 1) * lead,), param.dtype)
            array = as_strided(memory, shape, (lead * itemsize, itemsize))
            if mutation == "strided":
                mutation = "none"  # a strided view is what this parameter takes
        else:
            array = _aligned(shape, param.dtype)
        _fill(array, rng)
        value = array
        harmful = False
        if mutation == "dtype":
            other = draw(st.sampled_from([d for d in DTYPES if d != param.dtype]))
            value = _aligned(shape, other)
            _fill(value, rng)
            harmful = True
        elif mutation == "shape" and shape:
            bad = list(shape)
            axis = draw(st.integers(0, len(bad) - 1))
            bad[axis] += 1 + len(args)  # a different size for each parameter
            value = _aligned(tuple(bad), param.dtype)
            dim = param.shape[axis]
            # A symbolic dim only this parameter binds just takes the new value.
            harmful = isinstance(dim, int) or any(
                isinstance(p, Tensor) and p is not param and dim in p.shape for p in kernel.params
            )
        elif mutation == "rank":
            value = array.reshape((*shape, 1)) if draw(st.booleans()) else array.reshape(-1)
            harmful = len(value.shape) != len(shape)
        elif mutation == "strided" and array.size > 1:
            wide = _aligned((*shape[:-1], shape[-1] * 2), param.dtype)
            value = wide[..., ::2]
            value[...] = array
            harmful = not value.flags.c_contiguous and array.size > 0
        elif mutation == "offset":
            offset = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
            itemsize = np.dtype(param.dtype).itemsize
            offset -= offset % itemsize  # stay on element boundaries (else numpy can't view)
            value = _aligned(shape, param.dtype, offset)
            value[...] = array
            harmful = is_written and offset % param.alignment != 0 and array.size > 0
        elif mutation == "readonly":
            value = array.copy() if array.size else array
            value.flags.writeable = False
            harmful = is_written
        elif mutation == "byteorder" and param.dtype not in ("int8", "bool"):
            value = array.astype(array.dtype.newbyteorder("S"))
            harmful = True
        elif mutation == "overlap" and is_written and array.size:
            # The written array on an earlier argument's memory, or one element into it.
            earlier = [
                i
                for i, p in enumerate(kernel.params[: len(args)])
                if isinstance(p, Tensor)
                and p.dtype == param.dtype
                and p.name in arrays
                and arrays[p.name].shape == shape
            ]
            if earlier:
                index = draw(st.sampled_from(earlier))
                shift = draw(st.sampled_from([0, 1]))
                raw = _aligned((array.size + 1,), param.dtype)
                raw[: array.size] = arrays[kernel.params[index].name].reshape(-1)
                args[index] = raw[: array.size].reshape(shape)
                value = raw[shift : shift + array.size].reshape(shape)
                harmful = True
        elif mutation == "huge" and any(isinstance(d, str) for d in param.shape):
            big = tuple(
                (2**31 if isinstance(d, str) else d) if i == 0 else s
                for i, (d, s) in enumerate(zip(param.shape, shape, strict=True))
            )
            strides = tuple(int(np.prod(big[i + 1 :])) * array.itemsize for i in range(len(big)))
            value = as_strided(_aligned((64,), param.dtype), shape=big, strides=strides)
            harmful = True
        elif mutation == "other":
            value = draw(st.sampled_from([None, "x", 1.5, [1.0, 2.0], object()]))
            harmful = True
        elif mutation == "memoryview" and param.dtype != "bool":
            value = memoryview(array)
        elif mutation == "torch" and _torch() is not None and param.dtype != "uint16":
            value = _torch().from_numpy(array)
        elif mutation == "negview" and _torch() is not None and param.dtype in NEGATABLE:
            # torch's negative bit: memory holding -x, read as x. Inputs are resolved;
            # a written parameter is refused (the kernel would write a temporary).
            value = _torch().from_numpy(-array)._neg_view()
            harmful = is_written
        elif mutation == "torchlayout" and _torch() is not None and param.dtype in NEGATABLE:
            value, harmful = _torch_layout(draw, array)
        elif mutation == "fieldstride":
            # A field of a structured array: byte strides of itemsize + 1.
            record = np.zeros(shape, dtype=[("x", param.dtype), ("pad", np.int8)])
            record["x"] = array
            value = record["x"]
            harmful = array.size > 1
        elif mutation == "broadcast" and param.strides is not None and shape[0]:
            # Stride 0 along the rows: legal for a declared symbolic stride while the dim
            # fits the index width (the rows then all read one row); 2**31 rows or more
            # must be refused even though they address 8 elements.
            extent = draw(st.sampled_from([shape[0], 2**31 - 1, 2**31, 2**32 + 3]))
            row = _aligned(shape[1:], param.dtype)
            row[...] = array[0]
            value = as_strided(row, (extent, *shape[1:]), (0, *row.strides))
            harmful = extent != shape[0]
        if harmful:
            damage.append(f"{param.name}: {mutation}")
        arrays[param.name] = value if isinstance(value, np.ndarray) else array
        values[param.name] = np.array(_numpy(value), copy=True) if not harmful else None
        if is_written and not harmful:
            written[param.name] = value
        args.append(value)
    if draw(st.integers(0, 19)) == 0:
        if draw(st.booleans()) and args:
            args.pop()
        else:
            args.append(args[0] if args else 1)
        damage.append("count")
    return Call(name, adapter, args, values, written, not damage, damage)


@st.composite
def _scalars(draw: st.DrawFn, param: Scalar) -> Any:
    """``(value, valid)``: a value for ``param`` and whether the kernel must accept it."""
    if param.dtype == "bool":
        return draw(
            st.one_of(
                st.booleans().map(lambda b: (b, True)),
                st.just((np.bool_(True), True)),
                st.sampled_from([0, 1, 1.0, None, "True"]).map(lambda v: (v, False)),
            )
        )
    if param.dtype in INT_RANGES:
        low, high = INT_RANGES[param.dtype]
        safe = min(high, 2**62)  # int_mix adds arrays to shift: stay clear of overflow
        return draw(
            st.one_of(
                st.integers(-safe, safe).map(lambda v: (v, True)),
                st.integers(-safe, safe).map(lambda v: (np.int64(v), True)),
                st.sampled_from([low - 1, high + 1, 10**400, -(10**400), 2**64]).map(
                    lambda v: (v, False)
                ),
                st.sampled_from([1.5, 2.0, np.float64(3.0), None, "1", True]).map(
                    lambda v: (v, False)
                ),
            )
        )
    return draw(
        st.one_of(
            st.floats(width=32).map(lambda v: (v, True)),
            st.integers(-(2**24), 2**24).map(lambda v: (v, True)),
            st.sampled_from([1e39, -1e39, 10**400, 2**1024]).map(lambda v: (v, False)),
            st.sampled_from([None, "1.0", [1.0], 1j]).map(lambda v: (v, False)),
        )
    )


_TORCH: list[Any] = []


def _torch() -> Any:
    if not _TORCH:
        try:
            import torch
        except ImportError:
            _TORCH.append(None)
        else:
            _TORCH.append(torch)
    return _TORCH[0]


def _numpy(value: Any) -> Any:
    if isinstance(value, memoryview):
        return np.asarray(value)
    if type(value).__module__.startswith("torch"):
        return value.resolve_neg().numpy()
    return value


NEGATABLE = ("float32", "float64", "int8", "int32", "int64")
"""dtypes torch negates (its negative bit) and quantizes from."""


def _torch_layout(draw: st.DrawFn, array: Any) -> tuple[Any, bool]:
    """A torch tensor of the array's values in a form no kernel takes: ``(value, harmful)``."""
    torch = _torch()
    kind = draw(st.sampled_from(["sparse", "quantized", "nested", "zero", "complex"]))
    tensor = torch.from_numpy(array.copy())
    if kind == "sparse":
        return tensor.to_sparse(), True
    if kind == "quantized":
        return torch.quantize_per_tensor(tensor.float(), 0.5, 0, torch.qint32), True
    if kind == "nested":
        import warnings

        with warnings.catch_warnings():  # nested tensors warn that they are a prototype
            warnings.simplefilter("ignore")
            return torch.nested.nested_tensor([tensor, tensor]), True
    if kind == "zero" and array.size:  # torch's lazily zero tensor: data pointer 0
        return torch._efficientzerotensor(tuple(array.shape), dtype=tensor.dtype), True
    return tensor.to(torch.complex64), True


def check(call: Call, kernels: dict[tuple[str, str], Any]) -> str:
    """Make the call; assert the reference answer or a Python error naming a parameter.

    Returns:
        ``"ran"`` or ``"refused"``.
    """
    spec = KERNELS[call.kernel]
    kernel = kernels[(call.kernel, call.adapter)]
    names = {p.name for p in spec.params} | set(OUTPUT_NAMES.get(call.kernel, []))
    try:
        result = kernel(*call.args)
    except (TypeError, ValueError) as exc:
        message = str(exc)
        named = re.search(r"parameter '(\w+)'", message)
        count = "argument(s), got" in message
        assert (named and named.group(1) in names) or count, (
            f"{call.kernel}/{call.adapter}: error names no parameter: {message!r} ({call.damage})"
        )
        assert not call.valid, f"{call.kernel}/{call.adapter}: valid call refused: {message!r}"
        return "refused"
    assert call.valid, f"{call.kernel}/{call.adapter}: damaged call ran: {call.damage}"
    expected = spec.reference(call.values)
    got: dict[str, Any] = {}
    outputs = OUTPUT_NAMES.get(call.kernel, [])
    if len(outputs) == 1:
        got[outputs[0]] = result
    elif outputs:
        got.update(zip(outputs, result, strict=True))
    else:
        assert result is None
    got.update(call.written)
    for name, want in expected.items():
        have = np.asarray(_numpy(got[name]))
        assert have.shape == want.shape and have.dtype == want.dtype, (name, have, want)
        if spec.tolerance:
            scale = np.abs(want.astype(np.float64)) + 1.0
            with np.errstate(all="ignore"):
                close = (have == want) | (np.abs(have - want) <= spec.tolerance * scale)
            close |= np.isnan(have) & np.isnan(want)
            assert close.all(), f"{call.kernel}/{call.adapter}: wrong {name}"
        else:
            assert np.array_equal(have, want, equal_nan=want.dtype.kind == "f"), (
                f"{call.kernel}/{call.adapter}: wrong {name}: {have} != {want}"
            )
    return "ran"


def main(argv: list[str]) -> None:
    directories = json.loads(argv[1])
    examples = int(argv[2])
    derandomize = argv[3] == "derandomize"
    kernels = {
        (name, adapter): tl_runtime.load(directories[name], adapter=adapter)
        for name in KERNELS
        for adapter in ADAPTERS
    }
    outcomes = {"ran": 0, "refused": 0}

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=derandomize,
    )
    @given(calls())
    def run(call: Call) -> None:
        print(f"example: {call.kernel}/{call.adapter} {call.damage}", file=sys.stderr, flush=True)
        outcomes[check(call, kernels)] += 1

    run()
    print(json.dumps({"examples": sum(outcomes.values()), **outcomes}))


if __name__ == "__main__":
    main(sys.argv)
