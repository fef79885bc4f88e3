"""Child process of `test_fuzz_eager.py`: a hypothesis fuzz of eager kernel calls.

Run: python fuzz_eager.py EXAMPLES derandomize|random

Each example draws an eager kernel (`tljit_fuzz_eager_kernels`), an adapter, template
arguments (signed zeros, NaN, infinities, numpy scalars, bools standing for numbers),
and arguments: numpy arrays (contiguous, offset into a larger buffer, read-only) or
torch tensors (plain, lazily negated views), with at most one argument damaged (another
dtype, rank or length, not contiguous, big-endian, a masked array, a list, None, a
negated view as the written parameter, a missing or extra argument, an unknown
keyword). Some examples call twice, changing the arrays' values, or an array's shape in
place, in between. Every call must give the reference's answer or raise a TypeError or
ValueError naming the damaged parameter (or the kernel, for a wrong count); the second
call of a pair must compute on the arrays as they are then. A crash (a signal) ends
this process, and the test names the last example printed.
"""

from __future__ import annotations

import json
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import tljit_fuzz_eager_kernels as kernels_module

ADAPTERS = ("cython", "tvm_ffi")
SCALES = (-0.0, 0.0, 1.0, 2.5, -3.0, float("nan"), float("inf"), 1e30, 1, True)
BIASES = (0, -5, 7, 2**31, -(2**40), False)
TENSORS = {"axpy": ("X", "Y"), "row_sums": ("A", "B"), "add_wrapping": ("P", "Q")}
WRITTEN = {"row_sums": "B"}
DTYPES = {"X": "float32", "Y": "float32", "A": "int32", "B": "int64", "P": "int8", "Q": "int8"}
DAMAGES = (
    "dtype",
    "rank",
    "length",
    "strided",
    "byteorder",
    "masked",
    "list",
    "none",
    "negview-written",
)


@dataclass
class Call:
    """One fuzzed call (or pair of calls)."""

    kernel: str
    adapter: str
    args: list[Any]
    kwargs: dict[str, Any]
    values: list[Any]  # numpy copies of the tensors' values, for the reference
    template: Any
    damage: str = "none"
    damaged: str | None = None
    again: str = "no"  # "no", "values" or "reshape": a second call after that change
    notes: list[str] = field(default_factory=list)


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


def _values(draw: st.DrawFn, name: str, shape: tuple[int, ...]) -> Any:
    dtype = np.dtype(DTYPES[name])
    count = int(np.prod(shape))
    if dtype.kind == "f":
        special = [0.0, -0.0, 1.5, -2.0, 1e30, float("inf"), float("nan")]
        items = draw(st.lists(st.sampled_from(special), min_size=count, max_size=count))
        return np.array(items, dtype=dtype).reshape(shape)
    info = np.iinfo(dtype)
    items = draw(
        st.lists(
            st.integers(int(max(info.min, -(2**20))), int(min(info.max, 2**20))),
            min_size=count,
            max_size=count,
        )
    )
    return np.array(items, dtype=dtype).reshape(shape)


def _form(draw: st.DrawFn, values: Any, written: bool) -> Any:
    """The array in one of the forms a caller may pass (all valid)."""
    forms = ["numpy", "offset"] + ([] if written else ["readonly"])
    torch = _torch()
    if torch is not None:
        forms += ["torch"] + ([] if written or values.dtype == np.int8 else ["negview"])
    form = draw(st.sampled_from(forms))
    if form == "offset":  # one element into a larger buffer: not 64-byte aligned
        buffer = np.zeros(values.size + 1, values.dtype)
        view = buffer[1:].reshape(values.shape)
        view[...] = values
        return view
    if form == "readonly":
        copy = values.copy()
        copy.setflags(write=False)
        return copy
    if form == "torch":
        return torch.from_numpy(values.copy())
    if form == "negview":  # memory holds -x; the tensor reads as x
        return torch.from_numpy(-values)._neg_view()
    return values.copy()


def _damage(value: Any, damage: str) -> Any:
    array = np.asarray(value.resolve_neg().numpy() if hasattr(value, "resolve_neg") else value)
    if damage == "dtype":
        return array.astype(np.float64 if array.dtype != np.float64 else np.float32)
    if damage == "rank":
        return array.reshape((1, *array.shape))
    if damage == "length":
        return np.concatenate([array.reshape(-1), np.zeros(1, array.dtype)])
    if damage == "strided":
        doubled = np.repeat(array, 2, axis=-1)
        return doubled[..., ::2]
    if damage == "byteorder":
        return array.astype(array.dtype.newbyteorder(">"))
    if damage == "masked":
        return np.ma.masked_array(array, mask=np.zeros(array.shape, bool))
    if damage == "list":
        return array.tolist()
    if damage == "negview-written":
        torch = _torch()
        return torch.from_numpy(-array)._neg_view()
    return None


@st.composite
def calls(draw: st.DrawFn) -> Call:
    kernel = draw(st.sampled_from(sorted(TENSORS)))
    adapter = draw(st.sampled_from(ADAPTERS))
    names = TENSORS[kernel]
    if kernel == "axpy":
        shapes = [(draw(st.sampled_from([0, 1, 63, 64, 65, 130])),)] * 2
        template: Any = draw(st.sampled_from(SCALES))
    elif kernel == "row_sums":
        rows, cols = draw(st.sampled_from([(1, 1), (3, 4), (4, 3)]))
        shapes = [(rows, cols), (rows,)]
        template = draw(st.sampled_from(BIASES))
    else:
        shape = draw(st.sampled_from([(1, 1), (2, 70), (5, 3)]))
        shapes = [shape, shape]
        template = None
    values = [_values(draw, name, shape) for name, shape in zip(names, shapes, strict=True)]
    args = [
        _form(draw, v, WRITTEN.get(kernel) == name) for name, v in zip(names, values, strict=True)
    ]
    call = Call(kernel, adapter, args, {}, values, template)
    if template is not None:
        template_name = "scale" if kernel == "axpy" else "bias"
        if draw(st.booleans()):
            call.kwargs[template_name] = template
        else:
            call.args.append(template)
    kinds = ["none"] * 6 + list(DAMAGES) + ["extra", "missing", "keyword"]
    damage = draw(st.sampled_from(kinds))
    if damage == "negview-written" and (kernel not in WRITTEN or _torch() is None):
        damage = "none"
    if damage in DAMAGES:
        index = (
            names.index(WRITTEN[kernel])
            if damage == "negview-written"
            else draw(st.sampled_from(range(len(names))))
        )
        if damage in ("length", "strided") and values[index].ndim == 0:
            damage = "none"
        elif damage == "length" and kernel == "row_sums" and index == 0:
            damage = "rank"  # a row of another length is another K: a legal call
        if damage != "none":
            damaged = _damage(call.args[index], damage)
            if damage == "strided" and damaged.flags.c_contiguous:
                damage = "none"  # dims of extent 1 (or none): still a contiguous array
            elif damage == "byteorder" and damaged.dtype.itemsize == 1:
                damage = "none"  # one byte has no byte order
            else:
                call.args[index] = damaged
                call.damaged = names[index]
    elif damage == "extra":
        call.args = [*call.args, *([0] * (3 - len(call.args))), 1]
        call.kwargs = {}
    elif damage == "missing":
        call.args = call.args[:1]
        call.kwargs = {}
    elif damage == "keyword":
        call.kwargs["unknown"] = 1
    call.damage = damage
    if damage == "none":
        call.again = draw(st.sampled_from(["no", "no", "values", "reshape"]))
    return call


def _as_numpy(value: Any) -> Any:
    if hasattr(value, "resolve_neg"):
        return value.resolve_neg().numpy()
    return np.asarray(value)


def _expected(call: Call) -> Any:
    reference = kernels_module.REFERENCES[call.kernel]
    extra = [] if call.template is None else [call.template]
    return reference(*call.values, *extra)


def _compare(call: Call, result: Any) -> None:
    want = _expected(call)
    if call.kernel == "row_sums":
        assert result is None, result
        have = _as_numpy(call.args[1])
    else:
        have = _as_numpy(result)
    assert have.shape == want.shape and have.dtype == want.dtype, (have, want)
    if want.dtype.kind == "f":
        with np.errstate(all="ignore"):
            close = (have == want) | (np.abs(have - want) <= 1e-6 * (np.abs(want) + 1.0))
        close |= np.isnan(have) & np.isnan(want)
        assert close.all(), f"{call.kernel}/{call.adapter}: wrong result {have} != {want}"
    else:
        assert np.array_equal(have, want), f"{call.kernel}/{call.adapter}: {have} != {want}"


def _refusal_named(call: Call, exc: BaseException) -> None:
    message = str(exc)
    if call.damaged is not None:
        assert f"parameter '{call.damaged}'" in message, (
            f"{call.kernel}/{call.adapter}: {call.damage} of {call.damaged}: the refusal "
            f"names no parameter: {message!r}"
        )
    else:
        assert call.kernel in message, (
            f"{call.kernel}/{call.adapter}: {call.damage}: the refusal names no kernel: {message!r}"
        )


def _change_between_calls(call: Call) -> bool:
    """Change the first tensor argument's values (and for ``reshape``, its shape in
    place); returns False when this call's arrays cannot be changed that way."""
    first = call.args[0]
    if call.again == "values":
        if hasattr(first, "resolve_neg") and first.is_neg():
            return False
        if isinstance(first, np.ndarray) and not first.flags.writeable:
            return False
        current = _as_numpy(first)
        replacement = (current[::-1] if current.ndim == 1 else current[::-1, :]).copy()
        if hasattr(first, "copy_"):
            first.copy_(_torch().from_numpy(replacement))
        else:
            first[...] = replacement
        call.values[0] = replacement
        return True
    if call.again == "reshape" and call.kernel == "row_sums":
        if not isinstance(first, np.ndarray) or not first.flags.c_contiguous:
            return False
        rows, cols = first.shape
        if rows == cols:
            return False
        first.shape = (cols, rows)  # in place: the next call is another T.const K
        call.values[0] = first.copy()
        call.args[1] = np.zeros(cols, np.int64)
        return True
    return False


def check(call: Call, kernels: dict[tuple[str, str], Any]) -> str:
    """Make the call (twice where asked); the reference's answer or a named refusal."""
    kernel = kernels[(call.kernel, call.adapter)]
    valid = call.damage == "none"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = kernel(*call.args, **call.kwargs)
    except (TypeError, ValueError) as exc:
        assert not valid, f"{call.kernel}/{call.adapter}: a valid call was refused: {exc!r}"
        _refusal_named(call, exc)
        return "refused"
    assert valid, f"{call.kernel}/{call.adapter}: the damaged call ran: {call.damage}"
    _compare(call, result)
    if call.again != "no" and _change_between_calls(call):
        _compare(call, kernel(*call.args, **call.kwargs))
    return "ran"


def main(argv: list[str]) -> None:
    examples = int(argv[1])
    derandomize = argv[2] == "derandomize"
    kernels = {
        (name, adapter): function
        for adapter in ADAPTERS
        for name, function in kernels_module.make_kernels(adapter).items()
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
        print(
            f"example: {call.kernel}/{call.adapter} {call.damage} {call.damaged} "
            f"{call.template!r} again={call.again}",
            file=sys.stderr,
            flush=True,
        )
        outcomes[check(call, kernels)] += 1

    run()
    print(json.dumps({"examples": sum(outcomes.values()), **outcomes}))


if __name__ == "__main__":
    main(sys.argv)
