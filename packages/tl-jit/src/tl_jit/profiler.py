"""Timing kernels: `do_bench` (one figure of the shared statistic, `tl_jit.timing`)
and `Profiler` (inputs generated from a kernel's params, benchmarking, checking).

Nothing here names a device or target: where a kernel's inputs live comes from
its artifact (the manifest's ``argument_device_types``, DLPack codes the backend
declared), and device timing uses whatever accelerator torch reports through
its device-generic API (``torch.accelerator``, ``torch.Event``).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from tl_jit.profiler_bench import (
    RETURN_MODES,
    check_callable,
    check_inputs,
    do_bench,
    validate_mode,
)
from tl_jit.profiler_compare import (
    assert_close,
    reference_arguments,
    reference_uses_torch,
    written_and_expected,
)
from tl_jit.profiler_inputs import (
    aligned,
    available_memory,
    checked_dims,
    checked_seed,
    kernel_dims,
    random_array,
    scalar_input,
)
from tl_jit.tensor_supply import TensorSupplyType, checked_supply
from tl_jit.timing import (
    FLUSH_BYTES,
    HOST_DEVICE,
    TimingStats,
    check_timing_backend,
    measure,
    torch_accelerator,
)

if TYPE_CHECKING:
    import tl_runtime

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


def _accelerator_dlpack_type(device: Any) -> int | None:
    torch: Any = sys.modules["torch"]
    try:
        return int(torch.empty(0, device=device).__dlpack_device__()[0])
    except Exception:
        return None


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
        seed: random seed of the generated inputs: a non-negative int, or None for
            different inputs on every `make_inputs`.
        tensor_supply_type: TileLang's kind of generated values (a
            `tl_jit.TensorSupplyType` or its name); None: this profiler's own
            (`random_array`). With a kind given, the inputs of a host kernel are torch
            tensors when torch is installed, as TileLang's are (numpy arrays otherwise).

    Raises:
        TypeError, ValueError: ``dims`` is not a mapping of names to non-negative ints;
            ``tensor_supply_type`` is not a `TensorSupplyType`, its name or None.
        ValueError: ``dims`` names a dim that no parameter of the kernel has.
        ValueError: ``seed`` is neither None nor a non-negative int.
    """

    def __init__(
        self,
        kernel: ProfiledKernel,
        dims: Mapping[str, int] | None = None,
        seed: int | None = 0,
        tensor_supply_type: TensorSupplyType | str | None = None,
    ):
        self.kernel = kernel
        self.dims = kernel_dims(kernel, checked_dims(dims))
        self.seed = checked_seed(seed)
        self.tensor_supply_type = checked_supply(tensor_supply_type)
        self._like, self._device = _input_placement(kernel.manifest.argument_device_types)
        if self.tensor_supply_type is not None and self._like == "numpy" and _has_torch():
            # TileLang's supply kinds make torch tensors (its reference functions use
            # torch methods): host tensors here, which a host kernel takes as they are.
            self._like = "torch"
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

    def _check_sizes(
        self, planned: Sequence[tuple[Any, tuple[int, ...]]], dims: Mapping[str, int]
    ) -> None:
        """Refuse inputs the kernel cannot index or the machine cannot hold, before any
        of them is allocated (``planned``: each tensor parameter with its shape)."""
        from tl_runtime.argument_memory import max_elements
        from tl_runtime.dtypes import dtype_info

        manifest = self.kernel.manifest
        limit = max_elements(manifest)
        total = 0
        sizes: list[str] = []
        for param, shape in planned:
            count = math.prod(shape)
            if count > limit or max(shape, default=0) > limit:
                used = [d for d in param.shape if isinstance(d, str)]
                given = ", ".join(f"dims[{d!r}]={dims[d]}" for d in dict.fromkeys(used))
                raise ValueError(
                    f"{given or 'dims'}: parameter {param.name!r} of kernel "
                    f"{self.kernel.name!r} would have shape {list(shape)} ({count} elements); "
                    f"expected at most {limit} elements, and no dim longer, for a kernel "
                    f"that indexes with {manifest.index_bits}-bit integers"
                )
            nbytes = count * dtype_info(param.dtype).itemsize
            total += nbytes
            sizes.append(f"{param.name!r} {list(shape)} {param.dtype}: {nbytes} bytes")
        available = available_memory()
        if available is not None and total > available:
            raise ValueError(
                f"dims: the generated inputs of kernel {self.kernel.name!r} need {total} "
                f"bytes ({'; '.join(sizes)}); expected at most the {available} bytes of "
                f"memory available (given dims {dict(dims)!r})"
            )

    def make_inputs(
        self, dims: Mapping[str, int] | None = None, seed: int | None = None
    ) -> list[Any]:
        """Random inputs for every parameter not in ``out_idx``, in order.

        Tensors: standard normal floats or small ints (see `random_array`), numpy arrays
        aligned to each parameter's declared ``alignment``; scalars: ``1.0`` (float
        dtypes), ``True`` (``bool``) or ``1`` (integer dtypes).

        Args:
            dims: sizes of symbolic dims, over the profiler's own ``dims``.
            seed: the random seed; None: the profiler's ``seed``.

        Raises:
            ValueError: a symbolic dim has no size in ``dims``, or a size is not a
                non-negative integer, or ``dims`` names a dim the kernel does not have;
                ``seed`` is not None or a non-negative int; an input
                would have more elements (or a longer dim) than the kernel's index width
                addresses (the manifest's ``index_bits``: ``2**31 - 1`` for 32 bits), or
                the inputs together more bytes than the memory available. Checked
                before anything is allocated.
        """
        import numpy as np

        sizes = {**self.dims, **kernel_dims(self.kernel, checked_dims(dims))}
        chosen_seed = self.seed if seed is None else checked_seed(seed)
        planned: list[tuple[Any, tuple[int, ...] | None]] = []
        for index, param in enumerate(self.kernel.params):
            if index in self.kernel.out_idx:
                continue
            planned.append((param, None if param.kind == "scalar" else self._shape(param, sizes)))
        self._check_sizes([(p, shape) for p, shape in planned if shape is not None], sizes)
        rng = np.random.default_rng(chosen_seed)
        inputs: list[Any] = []
        for param, shape in planned:
            if shape is None:
                inputs.append(scalar_input(param.dtype))
                continue
            data = random_array(
                shape,
                param.dtype,
                rng,
                like=self._like,
                device=self._device,
                supply=self.tensor_supply_type,
            )
            if isinstance(data, np.ndarray):
                data = aligned(data, param.alignment)
            inputs.append(data)
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
        if func is not None and reference_uses_torch(func):
            args = reference_arguments(args, func, wants_torch=True)  # written against torch
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

    def run_once(self, func: Callable[..., Any] | None = None) -> Any:
        """Run the kernel (or ``func``, as `do_bench` gives it the inputs) once on this
        profiler's inputs and return what it returns (TileLang's ``run_once``)."""
        check_callable(func, "run_once(func)", optional=True)
        args = self.inputs
        if func is None:
            return self.kernel(*args)
        if reference_uses_torch(func):
            args = reference_arguments(args, func, wants_torch=True)
        return func(*args)

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
        input_tensors: Sequence[Any] | None = None,
        backend: str = "event",
        dynamic_symbolic_constraints: Mapping[str, int] | None = None,
    ) -> float | list[float]:
        """Time the kernel (or ``func``, called with the same inputs, as torch tensors
        for a function whose module imports torch); milliseconds per call.

        One figure of `measure` (the median by default); arguments as in
        `tl_jit.profiler.do_bench`; ``inputs`` (TileLang's ``input_tensors``) replaces
        the generated ones; ``dynamic_symbolic_constraints`` (TileLang's name) gives
        the sizes of symbolic dims for inputs made for this call (`make_inputs`'
        ``dims``).
        """
        check_timing_backend(backend)
        check_callable(func, "do_bench(func)", optional=True)
        check_inputs(inputs, "do_bench(inputs=...)")
        check_inputs(input_tensors, "do_bench(input_tensors=...)")
        if input_tensors is not None:
            if inputs is not None:
                raise TypeError("do_bench: pass inputs= or input_tensors=, not both")
            inputs = input_tensors
        if dynamic_symbolic_constraints is not None and inputs is None:
            inputs = self.make_inputs(dims=dynamic_symbolic_constraints)
        checked_quantiles = validate_mode(return_mode, quantiles)
        stats = self.measure(func, warmup, rep, flush_cache=flush_cache, inputs=inputs)
        if checked_quantiles is not None:
            return stats.quantiles(checked_quantiles)
        return stats.value(return_mode)

    def assert_allclose(
        self,
        ref_fn: Callable[..., Any],
        rtol: float = 1e-2,
        atol: float = 1e-2,
        *,
        dims: Mapping[str, int] | None = None,
        inputs: Sequence[Any] | None = None,
        input_tensors: Sequence[Any] | None = None,
        max_mismatched_ratio: float = 0.0,
    ) -> None:
        """Run the kernel and ``ref_fn`` on the same inputs and compare what the kernel
        writes with what ``ref_fn`` returns.

        ``ref_fn`` receives copies of the inputs (the params not in ``out_idx``, in
        order; ``inputs``, or TileLang's name ``input_tensors``, else `make_inputs`).
        Host arrays reach a reference whose module imports torch as torch CPU tensors
        (TileLang's references use torch methods), any other reference as numpy
        arrays. ``ref_fn`` returns the expected values of the parameters the kernel writes: first
        the ``out_idx`` outputs in the order the kernel returns them, then the parameters
        it writes in place (role ``"output"`` or ``"inout"`` in the manifest, not in
        ``out_idx``) in parameter order. One value is returned as one array, several as a
        tuple. So a kernel without ``out_idx`` is compared on the arrays it writes, never
        on the ones it only reads; a kernel with ``out_idx`` may also be given its
        ``out_idx`` outputs alone (its in-place writes then go unchecked).

        Every element must agree within ``atol + rtol * |expected|``, except at most a
        ``max_mismatched_ratio`` share of each value's elements (default 0: all of
        them; TileLang's profiler allows 1% unless told otherwise).

        Raises:
            AssertionError: more elements of a value differ beyond ``rtol``/``atol``
                than allowed (says which output, which parameter, how many, where and
                by how much), or ``ref_fn`` returned a number of values that matches
                neither form above.
            ValueError: the kernel writes no parameter (nothing to compare); a symbolic
                dim has no size in ``dims`` (and the other refusals of `make_inputs`).
            TypeError: ``ref_fn`` is not callable, or returned None.
        """
        kernel = self.kernel
        check_callable(ref_fn, "assert_allclose(ref_fn)", optional=False)
        check_inputs(inputs, "assert_allclose(inputs=...)")
        check_inputs(input_tensors, "assert_allclose(input_tensors=...)")
        if inputs is not None and input_tensors is not None:
            raise TypeError("assert_allclose: give inputs or input_tensors, not both")
        given = inputs if inputs is not None else input_tensors
        got, expected_list = written_and_expected(
            kernel, ref_fn, lambda: list(given) if given is not None else self.make_inputs(dims)
        )
        for index, ((name, g), e) in enumerate(zip(got, expected_list, strict=True)):
            try:
                assert_close(
                    g,
                    e,
                    rtol=rtol,
                    atol=atol,
                    max_mismatched_ratio=max_mismatched_ratio,
                    got_name="kernel",
                    expected_name="ref_fn",
                )
            except AssertionError as exc:
                raise AssertionError(
                    f"kernel {kernel.name!r} output {index} differs from ref_fn "
                    f"(parameter {name!r}): {exc}"
                ) from None

    def manual_assert_close(
        self,
        reference_program: Callable[..., Any],
        input_tensors: Sequence[Any] | None = None,
        manual_check_prog: Callable[[list[Any], list[Any]], Any] | None = None,
        *,
        inputs: Sequence[Any] | None = None,
    ) -> None:
        """Run the kernel and ``reference_program`` on the same inputs (as
        `assert_allclose` pairs them) and let ``manual_check_prog(kernel_values,
        reference_values)`` judge: it raises to fail (TileLang's
        ``manual_assert_close``).

        Raises:
            TypeError: ``manual_check_prog`` is not callable; both ``inputs`` and
                ``input_tensors`` given.
            whatever ``manual_check_prog`` raises; as `assert_allclose` for the pairing.
        """
        if not callable(manual_check_prog):
            raise TypeError(
                "manual_check_prog: expected a callable taking (kernel outputs, reference "
                f"outputs), got {type(manual_check_prog).__name__}"
            )
        if inputs is not None and input_tensors is not None:
            raise TypeError("manual_assert_close: give inputs or input_tensors, not both")
        given = inputs if inputs is not None else input_tensors
        got, expected = written_and_expected(
            self.kernel,
            reference_program,
            lambda: list(given) if given is not None else self.make_inputs(),
        )
        manual_check_prog([value for _, value in got], expected)

    @property
    def func(self) -> ProfiledKernel:
        """The profiled kernel (TileLang's ``profiler.func``, called on the inputs)."""
        return self.kernel

    def _get_inputs(
        self,
        with_output: bool = False,
        dynamic_symbolic_constraints: Mapping[str, int] | None = None,
    ) -> list[Any]:
        """The profiler's inputs (TileLang's ``_get_inputs``), or new ones sized by
        ``dynamic_symbolic_constraints``; ``with_output`` is refused: the outputs are
        the kernel's to make."""
        if with_output:
            raise NotImplementedError(
                "_get_inputs(with_output=True): the profiler makes the inputs only (the "
                "kernel returns its out_idx outputs)"
            )
        if dynamic_symbolic_constraints is not None:
            return self.make_inputs(dims=dynamic_symbolic_constraints)
        return self.inputs


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


def _has_torch() -> bool:
    """Whether torch can be imported (imported here only when it is installed)."""
    import importlib.util

    return "torch" in sys.modules or importlib.util.find_spec("torch") is not None


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
