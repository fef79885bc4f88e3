"""What a kernel assumes about its arguments, checked on every path of both CPU adapters.

Index width, byte order, aliasing, buffers without strides, the device check, scalars out
of range. Calls that would crash the process on a runtime without the checks (kernels
indexing past an array) run in a child process, so a regression fails the test instead
of killing the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import runtime_kernels as rk

import tl_runtime
from tl_runtime import Manifest, ParamSpec
from tl_runtime.checking import ArgumentChecker

Artifact = Callable[..., Path]

TESTS = Path(__file__).resolve().parent


def _aligned(shape: tuple[int, ...], dtype: str = "float32", fill: float = 0.0) -> Any:
    out = rk.aligned_array(np, shape, dtype)
    out[...] = fill
    return out


def _isolated(code: str) -> Any:
    """Run ``code`` in a child Python (tests dir importable); return the JSON it prints last."""
    script = f"import sys; sys.path.insert(0, {str(TESTS)!r})\n" + textwrap.dedent(code)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, (
        f"child exited with {proc.returncode} (a crash?): {proc.stderr[-2000:]}"
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _with_manifest(directory: Path, **changes: Any) -> None:
    manifest = tl_runtime.read_manifest(directory)
    fields = {f: getattr(manifest, f) for f in manifest.__dataclass_fields__}
    library = manifest.library
    tl_runtime.write_artifact(directory, Manifest(**{**fields, **changes}), [library])


# ---------------------------------------------------------------------------- index width
def test_arrays_beyond_the_index_width_are_refused_before_any_launch() -> None:
    """Views spanning 2**31 elements (over a few KiB of real memory) are refused by name on
    the first and the repeated call of both adapters: the kernel would index them with
    wrapped 32-bit integers (too few elements computed, or writes before the array)."""
    results = _isolated(
        """
        import json
        import numpy as np
        from numpy.lib.stride_tricks import as_strided
        import runtime_kernels as rk
        import tl_runtime

        def huge(shape):
            base = rk.aligned_array(np, (4096,), "float32")
            return as_strided(base, shape=shape, strides=(4,) if len(shape) == 1 else (32, 4))

        out = []
        for adapter in ("tvm_ffi", "cython"):
            vadd_n = tl_runtime.load(rk.cached_artifact("vadd_n"), adapter=adapter)
            alloc = tl_runtime.load(rk.cached_artifact("vadd_n", out_idx=(2,)), adapter=adapter)
            rows = tl_runtime.load(rk.cached_artifact("scale_rows"), adapter=adapter)
            small = rk.aligned_array(np, (16, 8), "float32")
            cases = [
                (vadd_n, (huge((2**31,)), huge((2**31,)), huge((2**31,)))),
                (vadd_n, (huge((2**32 + 16,)), huge((2**32 + 16,)), huge((2**32 + 16,)))),
                (alloc, (huge((2**31,)), huge((2**31,)))),
                (rows, (huge((2**28, 8)), huge((2**28, 8)))),
            ]
            for kernel, args in cases:
                for _ in range(2):
                    try:
                        kernel(*args)
                        out.append("ran")
                    except ValueError as exc:
                        out.append(str(exc))
            rows(small, rk.aligned_array(np, (16, 8), "float32"))  # still runs
        print(json.dumps(out))
        """
    )
    assert len(results) == 16
    for message in results:
        assert "parameter 'A': expected at most 2147483647 elements" in message, message
        assert "32-bit" in message


def _two_inputs(index_bits: int, out_idx: tuple[int, ...] = ()) -> ArgumentChecker:
    params = [
        ParamSpec("A", "float32", shape=("m", 1)),
        ParamSpec("B", "float32", shape=(1, "n")),
    ]
    if out_idx:
        params.append(ParamSpec("C", "float32", shape=("m", "n"), role="output"))
    manifest = Manifest(
        name="k",
        entry_symbol="k",
        params=tuple(params),
        out_idx=out_idx,
        target={"kind": "llvm"},
        library="k.so",
        index_bits=index_bits,
    )
    return ArgumentChecker(manifest)


def test_an_allocated_output_beyond_the_index_width_is_refused_by_name() -> None:
    checker = _two_inputs(32, out_idx=(2,))
    a, b = _aligned((2**16, 1)), _aligned((1, 2**16))
    with pytest.raises(ValueError, match=r"parameter 'C': expected at most 2147483647 elements"):
        checker.prepare((a, b))  # 2**32 elements: refused before anything is allocated
    assert checker.prepare((a[:2], b[:, :4])).outputs[0].shape == (2, 4)


def test_a_manifest_declaring_64_bit_indices_takes_larger_arrays() -> None:
    from numpy.lib.stride_tricks import as_strided

    base = _aligned((64,))
    a = as_strided(base, shape=(2**31, 1), strides=(4, 4))
    b = _aligned((1, 3))
    with pytest.raises(ValueError, match="parameter 'A': expected at most"):
        _two_inputs(32).prepare((a, b))
    _two_inputs(64).prepare((a, b))  # checks only: nothing is launched


def test_index_bits_round_trip_and_default(tmp_path: Path) -> None:
    manifest = _two_inputs(64).manifest
    tl_runtime.write_artifact(tmp_path, manifest, {"k.so": b"x"})
    data = json.loads((tmp_path / "manifest.json").read_text())
    assert data["index_bits"] == 64
    assert tl_runtime.read_manifest(tmp_path).index_bits == 64
    del data["index_bits"]
    assert Manifest.from_json(data).index_bits == 32
    with pytest.raises(tl_runtime.ArtifactError, match=r"index_bits: expected one of \[32, 64\]"):
        Manifest.from_json({**data, "index_bits": 16})


# ---------------------------------------------------------------------------- buffers
def test_ctypes_arrays_without_strides_compute_on_both_adapters() -> None:
    """ctypes arrays export buffers without strides: taken as compact, never dereferenced."""
    results = _isolated(
        """
        import ctypes, json
        import runtime_kernels as rk
        import tl_runtime

        out = []
        for adapter in ("tvm_ffi", "cython"):
            vadd = tl_runtime.load(rk.cached_artifact("vadd_elem"), adapter=adapter)
            rows = tl_runtime.load(rk.cached_artifact("scale_rows"), adapter=adapter)
            a = (ctypes.c_float * 1024)(*range(1024))
            b = (ctypes.c_float * 1024)(*([1.0] * 1024))
            c = (ctypes.c_float * 1024)()
            for _ in range(2):
                vadd(a, b, c)
            out.append(list(c) == [i + 1.0 for i in range(1024)])
            x = ((ctypes.c_float * 8) * 3)(*[(ctypes.c_float * 8)(*range(8))] * 3)
            y = ((ctypes.c_float * 8) * 3)()
            rows(x, y)
            out.append([list(r) for r in y] == [[2.0 * j for j in range(8)]] * 3)
        print(json.dumps(out))
        """
    )
    assert results == [True] * 4


@pytest.mark.parametrize("which", ["A", "C"])
def test_non_native_byte_order_is_refused_by_name(
    artifact: Artifact, adapter: str, which: str
) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a, b, c = _aligned((1024,), fill=1.0), _aligned((1024,), fill=2.0), _aligned((1024,))
    swapped = {"A": a, "C": c}[which].view(np.dtype("float32").newbyteorder("S"))
    for value in (swapped, memoryview(swapped)):
        call = (value, b, c) if which == "A" else (a, b, value)
        for _ in range(2):
            with pytest.raises(
                TypeError, match=rf"parameter '{which}': expected float32 in native"
            ):
                kernel(*call)
    kernel(a, b, c)
    assert np.all(c == 3.0)


# ---------------------------------------------------------------------------- aliasing
def test_an_output_overlapping_an_input_is_refused(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    raw = _aligned((2049,), fill=1.0)
    a, b = raw[:1024], _aligned((1024,), fill=2.0)
    cases = {
        "shifted one element": (a, b, raw[1:1025]),
        "the same array": (a, b, a),
        "the second input": (a, b, b),
    }
    for name, args in cases.items():
        for _ in range(2):  # the first call and the cached-view one
            with pytest.raises(ValueError, match="parameter 'C': expected memory shared with no"):
                kernel(*args)
            assert np.all(a == 1.0), name
    adjacent = raw[1024:2048]  # touching, not overlapping
    kernel(a, b, adjacent)
    assert np.all(adjacent == 3.0)


def test_an_accumulator_inside_its_input_is_refused(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("accumulate"), adapter=adapter)
    raw = _aligned((2048,), fill=1.0)
    with pytest.raises(ValueError, match=r"parameter 'X'.*overlapping parameter 'A'"):
        kernel(raw[:1024], raw[512:1536])
    x = _aligned((1024,), fill=1.0)
    kernel(raw[:1024], x)  # inout: its own in-place update is what it declares
    kernel(raw[:1024], x)
    assert np.all(x == 3.0)


def test_overlap_is_checked_on_every_call_of_cached_arrays(
    artifact: Artifact, adapter: str
) -> None:
    kernel = tl_runtime.load(artifact("vadd_elem"), adapter=adapter)
    a, b, c = _aligned((1024,), fill=1.0), _aligned((1024,), fill=2.0), _aligned((1024,))
    for _ in range(3):
        kernel(a, b, c)
        with pytest.raises(ValueError, match="parameter 'C'"):
            kernel(a, b, a)
        with pytest.raises(ValueError, match="parameter 'C'"):
            kernel(c, b, c)
    assert np.all(a == 1.0) and np.all(c == 3.0)


def test_torch_tensors_sharing_memory_are_refused(artifact: Artifact, adapter: str) -> None:
    torch = pytest.importorskip("torch")
    kernel = tl_runtime.load(artifact("vadd_n"), adapter=adapter)
    storage = torch.ones(2048)
    a, b = storage[:1024], torch.ones(1024)
    for _ in range(2):
        with pytest.raises(ValueError, match="parameter 'C': expected memory shared"):
            kernel(a, b, storage[512:1536])
    c = torch.empty(1024)
    kernel(a, b, c)
    assert bool((c == 2.0).all())


def test_the_checker_names_both_parameters() -> None:
    params = (
        ParamSpec("A", "float32", shape=(4,), alignment=4),
        ParamSpec("X", "float32", shape=(4,), role="inout", alignment=4),
    )
    manifest = Manifest(
        name="k", entry_symbol="k", params=params, target={"kind": "llvm"}, library="k.so"
    )
    raw = _aligned((8,))
    with pytest.raises(ValueError, match=r"parameter 'X'.*overlapping parameter 'A' at \["):
        ArgumentChecker(manifest).prepare((raw[:4], raw[3:7]))
    ArgumentChecker(manifest).prepare((raw[:4], raw[4:8]))


def test_a_zero_size_argument_inside_a_written_range_is_no_overlap() -> None:
    params = (
        ParamSpec("A", "float32", shape=("n",), alignment=4),
        ParamSpec("X", "float32", shape=(4,), role="inout", alignment=4),
    )
    manifest = Manifest(
        name="k", entry_symbol="k", params=params, target={"kind": "llvm"}, library="k.so"
    )
    x = _aligned((4,))
    ArgumentChecker(manifest).prepare((x[2:2], x))  # addresses no byte of X


# ---------------------------------------------------------------------------- devices
def test_device_only_manifests_refuse_host_torch_tensors(
    artifact_copy: Artifact, adapter: str
) -> None:
    """Neither fast path (numpy arrays, or torch tensors through DLPack) skips the device
    check of the full path."""
    torch = pytest.importorskip("torch")
    directory = artifact_copy("vadd_n", out_idx=(2,))
    _with_manifest(directory, argument_device_types=(2,))
    kernel = tl_runtime.load(directory, adapter=adapter)
    arrays = [
        (torch.ones(1024), torch.ones(1024)),
        (_aligned((1024,), fill=1.0), _aligned((1024,), fill=1.0)),
    ]
    for args in arrays:
        for _ in range(3):
            with pytest.raises(ValueError, match=r"parameter 'A': expected a tensor on DLPack"):
                kernel(*args)


# ---------------------------------------------------------------------------- scalars
def test_scalars_out_of_range_or_of_the_wrong_kind_are_named(
    artifact: Artifact, adapter: str
) -> None:
    kernel = tl_runtime.load(artifact("axpb", out_idx=(1,)), adapter=adapter)
    a = _aligned((64,), fill=1.0)
    for alpha in (10**400, -(10**400), 2**1024):
        with pytest.raises(ValueError, match="parameter 'alpha': expected a value representable"):
            kernel(a, alpha, 1)
    for k in (2.5, 2.0, np.float64(2.0), "2", None):
        with pytest.raises(TypeError, match=r"parameter 'k': expected an int scalar \(int32\)"):
            kernel(a, 1.0, k)
    with pytest.raises(ValueError, match=r"parameter 'k': expected an int in \["):
        kernel(a, 1.0, 2**31)
    assert np.all(kernel(a, 2.0, 3) == 5.0)


def test_meta_tensors_get_a_short_error_naming_the_parameter(
    artifact: Artifact, adapter: str
) -> None:
    torch = pytest.importorskip("torch")
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    meta = torch.empty(16, device="meta")
    with pytest.raises(TypeError, match="parameter 'A'") as info:
        kernel(meta, meta)
    assert len(str(info.value)) < 300


@pytest.mark.parametrize("adapter", ["tvm_ffi", "cython"])
def test_a_numpy_masked_array_is_refused_by_name(adapter: str) -> None:
    """A masked array's buffer holds the masked elements' data: the kernel read them and
    the result carried no mask. Other ndarray subclasses (a memmap, a view class) run."""
    vadd = tl_runtime.load(rk.cached_artifact("vadd_elem"), adapter=adapter)
    a = np.arange(1024, dtype=np.float32)
    b = np.ones(1024, np.float32)
    c = np.zeros(1024, np.float32)
    vadd(a, b, c)  # the plain type first: the launcher remembers it
    masked = np.ma.array(a, mask=a % 2 == 0)
    for args in ((masked, b, c), (a, np.ma.array(b), c), (a, b, np.ma.array(c))):
        with pytest.raises(TypeError, match="expected an array without a mask, got a numpy masked"):
            vadd(*args)

    class Tagged(np.ndarray):
        pass

    vadd(a.view(Tagged), b, c)
    np.testing.assert_array_equal(c, a + 1)
