"""Loading artifacts and calling kernels through each adapter: results and every argument check."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import runtime_kernels as rk

import tl_runtime
from tl_runtime.checking import ArgumentChecker, TensorView

Artifact = Callable[..., Path]


def _aligned(
    shape: tuple[int, ...], dtype: str = "float32", offset: int = 0, fill: float | None = None
) -> Any:
    out = rk.aligned_array(np, shape, dtype, offset)
    out[...] = np.random.default_rng(0).random(shape) if fill is None else fill
    return out


def test_vadd_in_place_output(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    a, b, c = _aligned((1024,)), _aligned((1024,), fill=2.0), _aligned((1024,), fill=0.0)
    assert kernel(a, b, c) is None
    np.testing.assert_allclose(c, a + 2.0)
    a[:] = 5.0  # the same objects again (cached views) see new data
    kernel(a, b, c)
    np.testing.assert_allclose(c, 7.0)
    assert kernel.adapter == adapter
    assert [p.name for p in kernel.params] == ["A", "B", "C"]
    assert "vadd" in repr(kernel)


def test_out_idx_outputs_are_numpy_aligned(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("sum_diff", out_idx=(2, 3)), adapter=adapter)
    a = np.random.default_rng(1).random((16, 8))
    b = np.random.default_rng(2).random((16, 8))
    s, d = kernel(a, b)
    for out in (s, d):
        assert type(out) is np.ndarray
        assert out.ctypes.data % 64 == 0
        assert out.shape == (16, 8) and out.dtype == np.float64
    np.testing.assert_allclose(s, a + b)
    np.testing.assert_allclose(d, a - b)


def test_symbolic_dims_bind_and_allocate(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    for n in (1, 7, 1000):
        x = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(kernel(x, x), 2 * x)
    assert kernel.bind_dims(np.zeros(5, np.float32), np.zeros(5, np.float32)) == {"n": 5}
    with pytest.raises(ValueError, match=r"'B'.*dim 0 = n = 5 \(bound by parameter 'A'\), got 6"):
        kernel(np.zeros(5, np.float32), np.zeros(6, np.float32))


def test_scalars(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("axpb", out_idx=(1,)), adapter=adapter)
    a = np.arange(64, dtype=np.float32)
    np.testing.assert_allclose(kernel(a, 2.0, 3), a * 2 + 3)
    np.testing.assert_allclose(kernel(a, 2, np.int32(3)), a * 2 + 3)  # int for float, numpy int
    np.testing.assert_allclose(kernel(a, np.float32(0.5), -1), a * 0.5 - 1)
    with pytest.raises(TypeError, match=r"'alpha': expected a real scalar \(float32\), got str"):
        kernel(a, "2", 3)
    with pytest.raises(TypeError, match=r"'k': expected an int scalar \(int32\), got float"):
        kernel(a, 1.0, 3.0)
    with pytest.raises(TypeError, match=r"'k'.*got bool"):
        kernel(a, 1.0, True)
    with pytest.raises(ValueError, match=r"'k': expected an int in \[-2147483648, 2147483647\]"):
        kernel(a, 1.0, 2**31)
    with pytest.raises(ValueError, match="'alpha': expected a value representable as float32"):
        kernel(a, 1e39, 0)


@pytest.mark.parametrize(
    ("args", "error", "needle"),
    [
        ((), TypeError, r"vadd\(A, B, C\) takes 3 argument\(s\), got 0"),
        (("a", "b"), TypeError, "takes 3 argument"),
        (("a", "b", "c", "c"), TypeError, "takes 3 argument"),
        (("f64", "b", "c"), TypeError, "'A': expected dtype float32, got float64"),
        (("i32", "b", "c"), TypeError, "'A': expected dtype float32, got int32"),
        (("a", "rank2", "c"), ValueError, r"'B': expected rank 1 \(shape \[1024\]\), got rank 2"),
        (("a", "short", "c"), ValueError, "'B': expected dim 0 = 1024, got 1000"),
        (("a", "strided", "c"), ValueError, "'B': expected a C-contiguous array"),
        (("a", "b", "list"), TypeError, "'C': expected an array supporting DLPack.*got list"),
        (("a", "b", None), TypeError, "'C': expected an array supporting DLPack.*got NoneType"),
        ((3.0, "b", "c"), TypeError, "'A': expected an array supporting DLPack.*got float"),
        (("a", "b", "misaligned"), ValueError, "'C': expected data aligned to 64 bytes.*output"),
        (("a", "b", "readonly"), ValueError, "'C': expected a writable array"),
    ],
)
def test_bad_arguments_raise_before_the_call(
    artifact: Artifact, adapter: str, args: tuple[Any, ...], error: type[Exception], needle: str
) -> None:
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    readonly = _aligned((1024,))
    readonly.flags.writeable = False
    values = {
        "a": _aligned((1024,)),
        "b": _aligned((1024,)),
        "c": _aligned((1024,)),
        "f64": np.zeros(1024),
        "i32": np.zeros(1024, np.int32),
        "rank2": np.zeros((32, 32), np.float32),
        "short": np.zeros(1000, np.float32),
        "strided": np.zeros(2048, np.float32)[::2],
        "list": [0.0] * 1024,
        "misaligned": _aligned((1024,), offset=4),
        "readonly": readonly,
    }
    real = [values.get(x, x) if isinstance(x, str) else x for x in args]
    with pytest.raises(error, match=needle):
        kernel(*real)


def test_misaligned_inputs_are_copied(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    for offset in (4, 8, 16, 32):
        a = _aligned((1024,), offset=offset)
        assert a.ctypes.data % 64 != 0
        b = _aligned((1024,), offset=offset, fill=1.0)
        c = _aligned((1024,), fill=0.0)
        kernel(a, b, c)
        np.testing.assert_allclose(c, a + 1.0)


def test_offset_slice_view(artifact: Artifact, adapter: str) -> None:
    """A plain numpy slice starting at a non-multiple of 16 elements is misaligned: copied."""
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    base = _aligned((1030,))
    view = base[3:1003]
    np.testing.assert_allclose(kernel(view, view), 2 * view)


def test_non_contiguous_2d_view(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("sum_diff", out_idx=(2, 3)), adapter=adapter)
    square = np.zeros((8, 16))
    with pytest.raises(ValueError, match="'A': expected a C-contiguous array"):
        kernel(square.T, np.zeros((16, 8)))
    with pytest.raises(ValueError, match="'B': expected dim 1 = 8, got 16"):
        kernel(np.zeros((16, 8)), np.zeros((16, 16)))


def test_other_dlpack_producers_and_tvm_ffi_tensors(artifact: Artifact, adapter: str) -> None:
    import tvm_ffi

    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    x = _aligned((10,))
    result = kernel(tvm_ffi.from_dlpack(x), x)
    assert type(result) is np.ndarray  # documented: non-torch producers get numpy outputs
    np.testing.assert_allclose(result, 2 * x)


def test_torch_in_torch_out(artifact: Artifact, adapter: str) -> None:
    torch = pytest.importorskip("torch")
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    x = torch.arange(10, dtype=torch.float32)
    out = kernel(x, x)
    assert isinstance(out, torch.Tensor) and out.device == x.device
    assert torch.allclose(out, 2 * x)


def test_wrong_device_is_refused(artifact: Artifact) -> None:
    manifest = tl_runtime.read_manifest(artifact("vadd"))
    checker = ArgumentChecker(manifest)
    gpu_view = TensorView("float32", (1024,), (1,), device_type=2, device_id=0, data_ptr=0)
    with pytest.raises(
        ValueError, match=r"'A': expected a tensor on DLPack device type \(1,\).*got device type 2"
    ):
        checker._check_tensor(checker.plan.params[0], gpu_view, {}, {})


def test_source_property(artifact: Artifact) -> None:
    with_source = tl_runtime.load(artifact("vadd", target="c"))
    assert with_source.source is not None and "vadd" in with_source.source
    assert tl_runtime.load(artifact("vadd")).source is None


def test_load_refuses_tampered_library(artifact_copy: Artifact) -> None:
    directory = artifact_copy("vadd")
    with (directory / "vadd.so").open("ab") as fh:
        fh.write(b"\0")
    with pytest.raises(tl_runtime.HashMismatchError, match=r"'vadd.so'"):
        tl_runtime.load(directory)


def test_load_errors(artifact: Artifact, tmp_path: Path) -> None:
    with pytest.raises(tl_runtime.ArtifactError, match=r"absent' does not exist"):
        tl_runtime.load(tmp_path / "absent")
    # ctypes never existed; a key nothing installs is spelled in the reserved namespace
    # (tl_backend_api.conformance.RESERVED_ADAPTER_KEY_PREFIX) so no plug-in can take it.
    for key in ("ctypes", "never-installed-nvrtc"):
        with pytest.raises(
            tl_runtime.AdapterUnavailableError,
            match=rf"'{key}' is not installed; installed adapters: \[.*'tvm_ffi'",
        ):
            tl_runtime.load(artifact("vadd"), adapter=key)
    with pytest.raises(TypeError, match="adapter: expected an adapter key"):
        tl_runtime.load(artifact("vadd"), adapter=3)  # type: ignore[arg-type]
    for path in (5, None, b"/tmp", 3.0):
        with pytest.raises(TypeError, match=r"load: path: expected the artifact directory"):
            tl_runtime.load(path)  # type: ignore[arg-type]


def test_wrong_entry_symbol(artifact_copy: Artifact) -> None:
    directory = artifact_copy("vadd")
    manifest = tl_runtime.read_manifest(directory)
    draft = tl_runtime.Manifest(
        **{
            **{f: getattr(manifest, f) for f in manifest.__dataclass_fields__},
            "entry_symbol": "nope",
        }
    )
    tl_runtime.write_artifact(directory, draft, ["vadd.so"])
    with pytest.raises(tl_runtime.ArtifactError, match="no entry 'nope'"):
        tl_runtime.load(directory)


def test_adapter_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tl_runtime.adapter_availability("tvm_ffi")
    assert not tl_runtime.adapter_availability("ctypes")
    assert "ctypes" not in tl_runtime.adapter_keys()
    unknown = tl_runtime.adapter_availability("never-installed-nvrtc")
    assert not unknown and "not installed" in unknown.reason
    from tl_runtime.adapters import cython_adapter

    monkeypatch.delenv("TL_RUNTIME_LAUNCHER", raising=False)
    monkeypatch.setattr(cython_adapter.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(cython_adapter, "shipped_launcher", lambda: None)
    # A launcher an earlier process built serves without Cython (no sys.path scan).
    monkeypatch.setattr(cython_adapter, "_extension", None)
    monkeypatch.setattr(cython_adapter, "_previously_built", lambda: Path("/built/launcher.so"))
    assert cython_adapter.CythonAdapter.probe()
    monkeypatch.setattr(cython_adapter, "_previously_built", lambda: None)
    missing = cython_adapter.CythonAdapter.probe()
    assert not missing and "Cython is not installed" in missing.reason


def test_unavailable_adapter_says_why(artifact: Artifact, monkeypatch: pytest.MonkeyPatch) -> None:
    from tl_runtime.adapters import base, cython_adapter

    monkeypatch.setattr(
        cython_adapter.CythonAdapter,
        "probe",
        classmethod(lambda cls: base.Availability(False, "no compiler here")),
    )
    with pytest.raises(
        tl_runtime.AdapterUnavailableError, match="'cython' is unavailable: no compiler here"
    ):
        tl_runtime.load(artifact("vadd"), adapter="cython")


def test_output_made_read_only_after_a_call_is_refused(artifact: Artifact, adapter: str) -> None:
    # The same output array again, now read-only: no fast path may reuse its old view.
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    a, c = _aligned((1024,)), _aligned((1024,))
    a[:] = 1.0
    kernel(a, a, c)
    kernel(a, a, c)
    c[:] = 0.0
    c.flags.writeable = False
    with pytest.raises(ValueError, match="'C': expected a writable array"):
        kernel(a, a, c)
    assert not c.any()


def test_read_only_input_is_copied_not_refused(artifact: Artifact, adapter: str) -> None:
    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    x = _aligned((16,))
    x.flags.writeable = False
    np.testing.assert_allclose(kernel(x, x), 2 * x)


def test_fast_path_sees_in_place_changes_of_a_cached_array(
    artifact: Artifact, adapter: str
) -> None:
    """The per-position view cache must not hide a reshape/retype of the same array object."""
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    a, b, c = _aligned((1024,)), _aligned((1024,)), _aligned((1024,))
    kernel(a, b, c)
    a.shape = (32, 32)
    with pytest.raises(ValueError, match="'A': expected rank 1"):
        kernel(a, b, c)
    a.shape = (1024,)
    a.dtype = np.int32
    with pytest.raises(TypeError, match="'A': expected dtype float32, got int32"):
        kernel(a, b, c)


def test_declared_strides_are_checked_instead_of_contiguity() -> None:
    manifest = tl_runtime.Manifest(
        name="strided",
        entry_symbol="strided",
        params=(tl_runtime.ParamSpec("A", "float32", shape=(4, 4), strides=("s", 1)),),
        target={"kind": "llvm"},
        library="strided.so",
    )
    checker = ArgumentChecker(manifest)
    wide = rk.aligned_array(np, (4, 16), "float32")
    assert checker.prepare([wide[:, :4]]).bindings == {"s": 16}
    assert checker.prepare([rk.aligned_array(np, (4, 4), "float32")]).bindings == {"s": 4}
    with pytest.raises(ValueError, match="'A': expected stride 1 = 1, got 4"):
        checker.prepare([rk.aligned_array(np, (4, 4), "float32").T])


def test_buffer_protocol_objects_are_accepted_by_every_adapter(
    artifact: Artifact, adapter: str
) -> None:
    import array

    kernel = tl_runtime.load(artifact("vadd_n", out_idx=(2,)), adapter=adapter)
    values = array.array("f", [1.0, 2.0, 3.0])
    np.testing.assert_allclose(kernel(values, memoryview(values)), [2.0, 4.0, 6.0])
    with pytest.raises(TypeError, match="'A': expected dtype float32, got float64"):
        kernel(array.array("d", [1.0]), values)


def test_concurrent_callers_get_their_own_results(artifact: Artifact, adapter: str) -> None:
    """The per-position view cache is shared by threads: results must still be per caller."""
    import threading

    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    failures: list[str] = []

    def worker(seed: int) -> None:
        a, b, c = (
            _aligned((1024,), fill=float(seed)),
            _aligned((1024,), fill=1.0),
            _aligned((1024,)),
        )
        for _ in range(300):
            kernel(a, b, c)
            if not (c == seed + 1.0).all():
                failures.append(f"thread {seed} saw {c[0]}")
                return

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_kernel_is_a_kernel_and_calls_its_call_path(artifact: Artifact, adapter: str) -> None:
    """No per-instance class: ``kernel(*args)`` runs the ``_call`` slot, visibly."""
    kernel = tl_runtime.load(artifact("vadd"), adapter=adapter)
    assert type(kernel) is tl_runtime.Kernel
    seen: list[tuple[Any, ...]] = []
    kernel._call = lambda *args: seen.append(args)
    kernel(1, 2, 3)
    assert seen == [(1, 2, 3)]


def test_float32_max_as_numpy_prints_it_is_accepted(artifact: Artifact, adapter: str) -> None:
    """3.4028235e38 (how numpy prints float32's largest value, just above it as a double)
    rounds to that value: it was refused as "not representable as float32"."""
    kernel = tl_runtime.load(artifact("axpb", out_idx=(1,)), adapter=adapter)
    a = np.ones(64, dtype=np.float32)
    f32_max = float(np.finfo(np.float32).max)
    overflow = 2.0**128 * (1 - 2.0**-25)  # half an ulp above: a tie, which rounds to inf
    below = float(np.nextafter(overflow, 0.0))
    for value in (3.4028235e38, -3.4028235e38, below, f32_max):
        for _ in range(3):  # the first call and the fast paths after it
            out = kernel(a, value, 0)
            assert np.isfinite(out).all() and out[0] == np.float32(value), (value, out[:1])
    for value in (overflow, -overflow, 1e39):
        for _ in range(3):
            with pytest.raises(
                ValueError, match="'alpha': expected a value representable as float32"
            ):
                kernel(a, value, 0)


def test_a_float16_scalar_may_be_anything_that_rounds_to_a_finite_float16() -> None:
    """65519 rounds to 65504 (float16's largest value) and was refused; 65520 is a tie
    that rounds to inf and stays refused. The other narrow float types follow the same rule."""
    import math

    import ml_dtypes

    limits = {"float16": 65520.0, "bfloat16": 2.0**128 * (1 - 2.0**-9), "float8_e5m2": 61440.0}
    limits["float8_e4m3fn"] = math.nextafter(464.0, math.inf)  # 464 rounds to 448 (no inf)
    for dtype, limit in limits.items():
        manifest = tl_runtime.Manifest(
            name="k",
            entry_symbol="k",
            params=(tl_runtime.ParamSpec("s", dtype, kind="scalar"),),
            target={"kind": "llvm"},
            library="k.so",
        )
        checker = ArgumentChecker(manifest)
        numpy_type = getattr(ml_dtypes, dtype, None) or np.dtype(dtype).type
        below = math.nextafter(limit, 0.0)
        for value in (below, -below, float(ml_dtypes.finfo(numpy_type).max)):
            assert np.isfinite(np.array(value).astype(numpy_type)), (dtype, value)
            assert checker.prepare([value]).args == [value], (dtype, value)
        assert checker.prepare([math.inf]).args == [math.inf]  # inf is a value of the type
        for value in (limit, -limit, limit * 2):
            with np.errstate(over="ignore"):
                assert not np.isfinite(np.array(value).astype(numpy_type)), (dtype, value)
            with pytest.raises(ValueError, match=f"'s': expected a value representable as {dtype}"):
                checker.prepare([value])
    checker = ArgumentChecker(
        tl_runtime.Manifest(
            name="k",
            entry_symbol="k",
            params=(tl_runtime.ParamSpec("s", "float16", kind="scalar"),),
            target={"kind": "llvm"},
            library="k.so",
        )
    )
    assert checker.prepare([65519.0]).args == [65519.0]
    with pytest.raises(ValueError, match=r"float16, got 65520\.0"):
        checker.prepare([65520.0])
