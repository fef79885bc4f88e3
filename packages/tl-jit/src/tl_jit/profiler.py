"""Timing kernels: `do_bench` (one figure of the shared statistic, `tl_jit.timing`)
and `Profiler` (inputs generated from a kernel's params, benchmarking, checking).

Nothing here names a device or target: where a kernel's inputs live comes from
its artifact (the manifest's ``argument_device_types``, DLPack codes the backend
declared), and device timing uses whatever accelerator torch reports through
its device-generic API (``torch.accelerator``, ``torch.Event``).
"""

from __future__ import annotations

import importlib
import numbers
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tl_jit.timing import (
    FLUSH_BYTES,
    HOST_DEVICE,
    TimingStats,
    measure,
    torch_accelerator,
)

if TYPE_CHECKING:
    import numpy as np

    import tl_runtime

RETURN_MODES = ("median", "mean", "min", "max")
_DLPACK_HOST = 1  # DLPack's code for host memory (kDLCPU)
__all__ = [
    "FLUSH_BYTES",
    "HOST_DEVICE",
    "RETURN_MODES",
    "ProfiledKernel",
    "Profiler",
    "do_bench",
    "random_array",
    "torch_accelerator",
]


def _validate_mode(return_mode: str, quantiles: Sequence[float] | None) -> None:
    if return_mode not in RETURN_MODES:
        raise ValueError(f"return_mode: expected one of {RETURN_MODES}, got {return_mode!r}")
    for q in quantiles or ():
        if isinstance(q, bool) or not isinstance(q, int | float) or not 0.0 <= q <= 1.0:
            raise ValueError(f"quantiles: expected values in [0, 1], got {q!r}")


def checked_dims(dims: Mapping[str, Any] | None) -> dict[str, int]:
    """``dims`` as ``{name: size}`` with every size a non-negative Python int.

    Raises:
        TypeError: ``dims`` is not a mapping of str names.
        ValueError: a size is not an exact non-negative integer (a float, a bool, a
            string); the message names the dim and what came.
    """
    if dims is None:
        return {}
    if not isinstance(dims, Mapping):
        raise TypeError(f"dims: expected a mapping of dim names to sizes, got {dims!r:.200}")
    checked: dict[str, int] = {}
    for name, size in dims.items():
        if not isinstance(name, str):
            raise TypeError(f"dims: expected str dim names, got {name!r:.80}")
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
            raise ValueError(
                f"dims[{name!r}]: expected a non-negative integer size, got "
                f"{type(size).__name__} {size!r:.80}"
            )
        checked[name] = int(size)
    return checked


def _accelerator_dlpack_type(device: Any) -> int | None:
    torch: Any = sys.modules["torch"]
    try:
        return int(torch.empty(0, device=device).__dlpack_device__()[0])
    except Exception:
        return None


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25.0,
    rep: float = 100.0,
    return_mode: str = "median",
    quantiles: Sequence[float] | None = None,
    *,
    flush_cache: bool = False,
    device: str = "auto",
    max_repeats: int = 100_000,
) -> float | list[float]:
    """Time ``fn()`` and return milliseconds per call (one figure of `tl_jit.timing.measure`).

    Warms up for at least ``warmup`` ms and until the time per call is stable, then
    times about ``rep`` ms of calls one by one (at least 5). `tl_jit.timing.measure`
    gives the whole statistic (median, spread, outliers, throughput).

    Args:
        fn: the thing to time, called without arguments.
        warmup: milliseconds of untimed calls first (at least).
        rep: milliseconds of timed calls.
        return_mode: ``"median"`` (the default: robust to a call preempted by other
            work), ``"mean"``, ``"min"`` or ``"max"`` of the per-call times.
        quantiles: when given, return these quantiles (each in [0, 1]) instead.
        flush_cache: write a 64 MiB buffer before every timed call (CPU: cold caches).
        device: ``"cpu"`` (wall clock); the device type of torch's accelerator (timed
            with its events, synchronized through ``torch.accelerator``); or
            ``"auto"``: the accelerator when torch is already imported and has one,
            else the wall clock.
        max_repeats: upper bound on the number of timed calls.

    Returns:
        A float (ms), or a list of floats for ``quantiles``.

    Raises:
        ValueError: a bad ``warmup``, ``rep``, ``return_mode``, ``quantiles`` or ``device``.
        whatever ``fn`` raises.
    """
    _validate_mode(return_mode, quantiles)
    stats = measure(
        fn,
        warmup=warmup,
        rep=rep,
        flush_cache=flush_cache,
        device=device,
        max_repeats=max_repeats,
    )
    if quantiles is not None:
        return stats.quantiles(quantiles)
    return stats.value(return_mode)


def random_array(
    shape: Sequence[int],
    dtype: str,
    rng: np.random.Generator,
    *,
    like: str = "numpy",
    device: Any = "auto",
) -> Any:
    """A random array: standard normal for floats, small ints (-4..4, 0..8 unsigned), bools.
    bfloat16 and float8 numpy arrays are ml_dtypes'.

    ``like="torch"`` gives a torch tensor on ``device``: a torch device, None
    (host memory) or ``"auto"`` (torch's accelerator when it has one).
    """
    import numpy as np

    # Drawn in the narrowest type that holds the values (int8, float32), then cast: an
    # input of N elements costs N of its own elements plus N of the draw, never 8N bytes.
    if dtype == "bool":
        data: Any = rng.integers(0, 2, size=shape, dtype=np.uint8).astype(np.bool_)
    elif dtype.startswith("uint"):
        data = rng.integers(0, 9, size=shape, dtype=np.uint8).astype(dtype, copy=False)
    elif dtype.startswith("int"):
        data = rng.integers(-4, 5, size=shape, dtype=np.int8).astype(dtype, copy=False)
    elif dtype == "bfloat16":
        data = rng.standard_normal(size=shape, dtype=np.float32)
        if like != "torch":  # numpy's bfloat16 is ml_dtypes' (a tl-runtime dependency)
            import ml_dtypes

            data = data.astype(ml_dtypes.bfloat16)
    else:
        draw = np.float64 if np.dtype(dtype).itemsize > 4 else np.float32
        data = rng.standard_normal(size=shape, dtype=draw).astype(dtype, copy=False)
    if like == "torch":
        torch: Any = importlib.import_module("torch")

        tensor = torch.from_numpy(np.ascontiguousarray(data))
        if dtype == "bfloat16":
            tensor = tensor.to(torch.bfloat16)
        target = torch_accelerator() if isinstance(device, str) and device == "auto" else device
        return tensor if target is None else tensor.to(target)
    return data


class ProfiledKernel(Protocol):
    """What a `Profiler` needs of a kernel; `tl_jit.JITKernel` provides it.

    Declared here so this module does not import tl_jit.kernel, which imports
    it (``JITKernel.get_profiler``).
    """

    @property
    def name(self) -> str:
        """The kernel's name."""
        ...

    @property
    def params(self) -> tuple[tl_runtime.ParamSpec, ...]:
        """Every parameter, in order."""
        ...

    @property
    def out_idx(self) -> tuple[int, ...]:
        """Indices of the parameters the call allocates and returns."""
        ...

    @property
    def manifest(self) -> tl_runtime.Manifest:
        """The artifact's manifest (``argument_device_types`` places the inputs)."""
        ...

    def __call__(self, *args: Any) -> Any:
        """Run the kernel."""
        ...


class Profiler:
    """Benchmarks and checks one `JITKernel` on inputs generated from its params.

    Args:
        kernel: the kernel.
        dims: sizes of symbolic dims (``{"M": 1024}``); required for params that use them.
        seed: random seed of the generated inputs.

    Raises:
        TypeError, ValueError: ``dims`` is not a mapping of names to non-negative ints.
    """

    def __init__(
        self, kernel: ProfiledKernel, dims: Mapping[str, int] | None = None, seed: int = 0
    ):
        self.kernel = kernel
        self.dims = checked_dims(dims)
        self.seed = seed
        self._like, self._device = _input_placement(kernel.manifest.argument_device_types)
        self._inputs: list[Any] | None = None

    def _shape(self, param: Any, dims: Mapping[str, int]) -> tuple[int, ...]:
        shape = []
        for dim in param.shape:
            if isinstance(dim, str):
                if dim not in dims:
                    raise ValueError(
                        f"dims: parameter {param.name!r} has symbolic dim {dim!r}; pass "
                        f"dims={{{dim!r}: <size>}} (got {dict(dims)!r})"
                    )
                shape.append(int(dims[dim]))
            else:
                shape.append(dim)
        return tuple(shape)

    def make_inputs(
        self, dims: Mapping[str, int] | None = None, seed: int | None = None
    ) -> list[Any]:
        """Random inputs for every parameter not in ``out_idx``, in order.

        Tensors: standard normal floats or small ints; scalars: 1.0 / 1.

        Raises:
            ValueError: a symbolic dim has no size in ``dims``, or a size is not a
                non-negative integer.
        """
        import numpy as np

        sizes = {**self.dims, **checked_dims(dims)}
        rng = np.random.default_rng(self.seed if seed is None else seed)
        inputs: list[Any] = []
        for index, param in enumerate(self.kernel.params):
            if index in self.kernel.out_idx:
                continue
            if param.kind == "scalar":
                inputs.append(1.0 if "float" in param.dtype else 1)
            else:
                inputs.append(
                    random_array(
                        self._shape(param, sizes),
                        param.dtype,
                        rng,
                        like=self._like,
                        device=self._device,
                    )
                )
        return inputs

    @property
    def inputs(self) -> list[Any]:
        """The inputs `do_bench` uses (made once with `make_inputs`)."""
        if self._inputs is None:
            self._inputs = self.make_inputs()
        return self._inputs

    def measure(
        self,
        func: Callable[..., Any] | None = None,
        warmup: float = 25.0,
        rep: float = 100.0,
        *,
        flops: float | None = None,
        bytes: float | None = None,
        flush_cache: bool = False,
        inputs: Sequence[Any] | None = None,
    ) -> TimingStats:
        """Time the kernel (or ``func``, called with the same inputs): the whole statistic.

        Arguments as in `tl_jit.timing.measure`; ``flops``/``bytes`` (work per call) add
        the throughput; ``inputs`` replaces the generated ones. Warns (`TimingWarning`)
        once per process when the OpenMP runtime's idle workers spin (see
        `tl_runtime.thread_policy`), which inflates times on a busy machine.
        """
        target = func if func is not None else self.kernel
        args = list(inputs) if inputs is not None else self.inputs
        device = HOST_DEVICE if self._device is None else str(self._device.type)
        _warn_if_workers_spin()
        return measure(
            lambda: target(*args),
            warmup=warmup,
            rep=rep,
            flops=flops,
            bytes=bytes,
            flush_cache=flush_cache,
            device=device,
        )

    def do_bench(
        self,
        func: Callable[..., Any] | None = None,
        warmup: float = 25.0,
        rep: float = 100.0,
        return_mode: str = "median",
        quantiles: Sequence[float] | None = None,
        *,
        flush_cache: bool = False,
        inputs: Sequence[Any] | None = None,
    ) -> float | list[float]:
        """Time the kernel (or ``func``, called with the same inputs); milliseconds per call.

        One figure of `measure` (the median by default); arguments as in
        `tl_jit.profiler.do_bench`; ``inputs`` replaces the generated ones.
        """
        _validate_mode(return_mode, quantiles)
        stats = self.measure(func, warmup, rep, flush_cache=flush_cache, inputs=inputs)
        if quantiles is not None:
            return stats.quantiles(quantiles)
        return stats.value(return_mode)

    def assert_allclose(
        self,
        ref_fn: Callable[..., Any],
        rtol: float = 1e-2,
        atol: float = 1e-2,
        *,
        dims: Mapping[str, int] | None = None,
        inputs: Sequence[Any] | None = None,
    ) -> None:
        """Run the kernel and ``ref_fn`` on the same inputs and compare the outputs.

        ``ref_fn`` receives the inputs (the params not in ``out_idx``) and returns the
        expected output (one array, or a tuple for several ``out_idx`` outputs). A kernel
        without ``out_idx`` is compared on the arrays it updates in place against
        what ``ref_fn`` returns for them (a tuple in parameter order, or one array).

        Raises:
            AssertionError: a value differs beyond ``rtol``/``atol`` (says which output
                and by how much).
            ValueError: a symbolic dim has no size in ``dims``.
        """
        import numpy as np

        args = list(inputs) if inputs is not None else self.make_inputs(dims)
        reference_args = [a.clone() if hasattr(a, "clone") else np.copy(a) for a in args]
        got = self.kernel(*args)
        expected = ref_fn(*reference_args)
        if not self.kernel.out_idx:
            got = tuple(a for a in args if hasattr(a, "shape"))
        got_list = list(got) if isinstance(got, tuple | list) else [got]
        expected_list = list(expected) if isinstance(expected, tuple | list) else [expected]
        if len(got_list) != len(expected_list):
            if not self.kernel.out_idx and len(expected_list) < len(got_list):
                got_list = got_list[-len(expected_list) :]
            else:
                raise AssertionError(
                    f"ref_fn returned {len(expected_list)} values, the kernel "
                    f"{len(got_list)} outputs"
                )
        for position, (g, e) in enumerate(zip(got_list, expected_list, strict=True)):
            g_np = _to_numpy(g)
            e_np = _to_numpy(e)
            try:
                np.testing.assert_allclose(g_np, e_np, rtol=rtol, atol=atol)
            except AssertionError as exc:
                raise AssertionError(
                    f"kernel {self.kernel.name!r} output {position} differs from ref_fn: {exc}"
                ) from None


def _input_placement(device_types: Sequence[int]) -> tuple[str, Any]:
    """How a kernel accepting arrays of ``device_types`` (DLPack codes) gets its inputs.

    ``("numpy", None)`` for a kernel that takes host arrays only; else torch
    tensors, on torch's accelerator when the kernel accepts its device type
    (``("torch", device)``), else in host memory (torch tensors when torch is
    installed, numpy arrays when not): the adapter moves them, or says it cannot.
    """
    if all(code == _DLPACK_HOST for code in device_types):
        return "numpy", None
    accelerator = torch_accelerator(import_torch=True)
    if accelerator is not None and _accelerator_dlpack_type(accelerator) in device_types:
        return "torch", accelerator
    if "torch" in sys.modules:
        return "torch", None
    return "numpy", None  # no torch: host arrays, which the adapter moves or refuses


def _to_numpy(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "detach"):
        value = value.detach().float().cpu().numpy()
    array = np.asarray(value)
    if array.dtype == np.float16:
        array = array.astype(np.float32)
    return array


class TimingWarning(UserWarning):
    """A timing may not be the kernel's own (idle OpenMP workers spin on this machine)."""


_warned_spin = False


def _warn_if_workers_spin() -> None:
    """Warn once when the default wait policy did not reach the OpenMP runtime."""
    global _warned_spin
    if _warned_spin:
        return
    from tl_runtime import thread_policy

    policy = thread_policy()
    if not policy.effective:
        _warned_spin = True
        warnings.warn(
            f"timings may include idle OpenMP workers spinning: {policy.detail}",
            TimingWarning,
            stacklevel=3,
        )
