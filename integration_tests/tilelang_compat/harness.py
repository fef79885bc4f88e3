"""One corpus case: a TileLang program built for given sizes, its inputs and a numpy reference.

The harness is shared by the corpus test and by benchmarks: `Case.build` gives the
PrimFunc for the case's sizes (or others), `Case.make_inputs` the arrays, and
`Case.expected` what numpy computes from them. `run_on_cpu` compiles and checks one
case on a CPU target; `build_for_cuda` lowers it for CUDA and compiles it with nvcc
without needing a GPU.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Arrays = list[np.ndarray]

CUDA_TARGET = {"kind": "cuda", "arch": "sm_80"}
"""The CUDA target the corpus lowers for: an Ampere part (tensor cores, cp.async, no TMA)."""


@dataclass(frozen=True)
class Case:
    """One kernel of the corpus.

    Attributes:
        name: unique id (``<source stem>.<function>[-variant]``).
        source: the TileLang file the program comes from.
        program: ``"<module in programs/>:<function>"``: a builder returning a PrimFunc,
            a ``@tilelang.jit`` function, or a module-level ``@T.prim_func``.
        args: the builder's arguments (sizes, dtypes) for this case.
        inputs: ``(args, rng) -> arrays`` for every parameter not in ``out_idx``, in
            parameter order (outputs updated in place included).
        reference: ``(args, *inputs) -> expected outputs`` computed with numpy.
        out_idx: parameters the kernel allocates and returns; None: taken from the
            ``@tilelang.jit`` options of the program (or no outputs allocated).
        inplace: indices into ``inputs`` of arrays the kernel writes, compared after
            the call (after the returned outputs, when there are any).
        rtol, atol: tolerance of the comparison.
        cuda_arch: the arch the CUDA column lowers for when `CUDA_TARGET`'s cannot run the
            program (fp8 arithmetic needs ``sm_89``); None: `CUDA_TARGET`'s.
    """

    name: str
    source: str
    program: str
    args: Mapping[str, Any]
    inputs: Callable[[Mapping[str, Any], np.random.Generator], Arrays]
    reference: Callable[..., Arrays]
    out_idx: Sequence[int] | None = None
    inplace: Sequence[int] = ()
    rtol: float = 1e-5
    atol: float = 1e-5
    tags: frozenset[str] = field(default_factory=frozenset)
    cuda_arch: str | None = None

    def function(self) -> Any:
        """The program object: builder function, ``@jit`` function or PrimFunc."""
        module_name, _, attribute = self.program.partition(":")
        module = importlib.import_module(
            f"integration_tests.tilelang_compat.programs.{module_name}"
        )
        return getattr(module, attribute)

    def build(self, **overrides: Any) -> tuple[Any, list[int] | None]:
        """``(PrimFunc, out_idx)`` for the case's arguments updated with ``overrides``."""
        from tvm.tirx import PrimFunc

        program = self.function()
        if hasattr(program, "jit_function"):  # @autotune over @jit: build the jit function
            program = program.jit_function
        args = {**self.args, **overrides}
        out_idx: Any = self.out_idx
        if isinstance(program, PrimFunc):
            func = program
        elif hasattr(program, "get_prim_func") and hasattr(program, "options"):
            func = program.get_prim_func(**args)
            if out_idx is None:
                out_idx = program.options.get("out_idx")
        else:
            func = program(**args)
        if isinstance(out_idx, int):
            out_idx = [out_idx]
        return func, None if out_idx is None else list(out_idx)

    def make_inputs(self, seed: int = 0, **overrides: Any) -> Arrays:
        """The case's input arrays (deterministic for a seed)."""
        return self.inputs({**self.args, **overrides}, np.random.default_rng(seed))

    def expected(self, inputs: Arrays, **overrides: Any) -> Arrays:
        """What numpy computes from ``inputs`` (copies, so in-place kernels compare fairly)."""
        copies = [np.array(a, copy=True) for a in inputs]
        return [np.asarray(r) for r in self.reference({**self.args, **overrides}, *copies)]

    def canonical(self, outputs: Sequence[Any]) -> Arrays:
        """``outputs`` in the form `compare` checks: as they are, unless the program's
        right answer has more than one order (a subclass then sorts what may vary)."""
        return [np.asarray(o) for o in outputs]


def is_float(dtype: np.dtype[Any]) -> bool:
    """Whether ``dtype`` holds floats: numpy's own or ml_dtypes' (bfloat16, float8_*), whose
    numpy kind is ``"V"``."""
    if dtype.kind == "f":
        return True
    if dtype.kind != "V" or dtype.names is not None:
        return False
    import ml_dtypes

    try:
        ml_dtypes.finfo(dtype)
    except ValueError:
        return False
    return True


def compare(case: Case, got: Sequence[Any], want: Sequence[np.ndarray]) -> None:
    """Assert each output matches the reference within the case's tolerance.

    Raises:
        AssertionError: a count, shape or value mismatch (names the output).
    """
    assert len(got) == len(want), f"{case.name}: {len(got)} outputs, reference has {len(want)}"
    got, want = case.canonical(got), case.canonical(want)
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        g = np.asarray(g)
        assert g.shape == w.shape, f"{case.name}: output {index} shape {g.shape} != {w.shape}"
        np.testing.assert_allclose(
            g.astype(np.float64) if is_float(g.dtype) else g,
            w.astype(np.float64) if is_float(w.dtype) else w,
            rtol=case.rtol,
            atol=case.atol,
            err_msg=f"{case.name}: output {index}",
        )


def run_kernel(case: Case, kernel: Any, inputs: Arrays, out_idx: list[int] | None) -> list[Any]:
    """Call a compiled kernel on ``inputs`` and return its outputs (returned or in place)."""
    result = kernel(*inputs)
    written = [inputs[i] for i in case.inplace]
    if out_idx:
        return [*(list(result) if isinstance(result, list | tuple) else [result]), *written]
    return written


def run_on_cpu(case: Case, target: str) -> None:
    """Compile the case for ``target`` (``"c"`` or ``"llvm"``), run it, compare with numpy.

    Raises:
        AssertionError: wrong numbers; any compiler error as it comes.
    """
    import tl_jit

    func, out_idx = case.build()
    kernel = tl_jit.compile(func, out_idx=out_idx, target=target)
    inputs = case.make_inputs()
    want = case.expected(inputs)
    compare(case, run_kernel(case, kernel, inputs, out_idx), want)


def _output_arrays(func: Any, out_idx: Sequence[int], inputs: Arrays) -> dict[int, np.ndarray]:
    """Poisoned arrays for the parameters in ``out_idx``: NaN for floats, the largest value
    for integers, True for bools, so an element the kernel never writes cannot pass for a
    right answer by what the allocator happened to hand back.

    Symbolic extents are bound from the inputs' shapes (the first input axis with the
    same variable).
    """
    from tvm.tirx import BufferType

    from tl_runtime.dtypes import dtype_info, numpy_dtype

    params = list(func.params)
    input_params = [p for i, p in enumerate(params) if i not in out_idx]
    bound: dict[str, int] = {}
    for param, array in zip(input_params, inputs, strict=False):
        if isinstance(param.ty, BufferType):
            for extent, size in zip(param.ty.shape, np.shape(array), strict=False):
                if not hasattr(extent, "value"):
                    bound.setdefault(str(extent), int(size))
    outputs: dict[int, np.ndarray] = {}
    for index in out_idx:
        ty = params[index].ty
        shape = tuple(int(e.value) if hasattr(e, "value") else bound[str(e)] for e in ty.shape)
        dtype = np.dtype(numpy_dtype(dtype_info(str(ty.dtype))))  # ml_dtypes' for bf16/fp8
        if is_float(dtype):
            fill: Any = np.nan
        elif dtype.kind == "b":
            fill = True
        else:
            fill = np.iinfo(dtype).max
        outputs[index] = np.full(shape, fill, dtype=dtype)
    return outputs


def run_with_poisoned_outputs(case: Case, target: str) -> list[np.ndarray]:
    """Run the case on ``target`` with every output pre-filled with a poison value.

    The kernel is compiled without ``out_idx`` and given the output arrays itself, so its
    results are independent of allocator reuse (two targets given the same inputs are
    comparable bit for bit); the results are also checked against numpy.

    Returns:
        The outputs (returned or written in place), in the case's order.

    Raises:
        AssertionError: wrong numbers (an unwritten element among them).
    """
    import tl_jit

    func, out_idx = case.build()
    kernel = tl_jit.compile(func, out_idx=None, target=target)
    inputs = case.make_inputs()
    want = case.expected(inputs)
    if out_idx:
        count = len(func.params)
        positions = sorted({i % count for i in out_idx})
        outputs = _output_arrays(func, positions, inputs)
        pending = iter(inputs)
        kernel(*[outputs[i] if i in outputs else next(pending) for i in range(count)])
        got = [outputs[i] for i in (i % count for i in out_idx)]
        got += [np.asarray(inputs[i]) for i in case.inplace]
    else:
        kernel(*inputs)
        got = [np.asarray(inputs[i]) for i in case.inplace]
    compare(case, got, want)
    return got


class NvccError(RuntimeError):
    """nvcc refused the CUDA C generated for a case (its message is the error's text)."""


def build_for_cuda(case: Case, directory: Path) -> Path:
    """Lower the case for `CUDA_TARGET` (or its ``cuda_arch``), generate CUDA C and compile it with nvcc to a cubin.

    No GPU is needed: the source-only execution backend lowers and emits the CUDA C
    (as a deployment build would) and nvcc compiles it for `CUDA_TARGET`'s arch.

    Returns:
        The cubin's path.

    Raises:
        NvccError: nvcc failed (its last messages); any lowering error as it comes.
    """
    from tl_backend_api import create_backend_context
    from tl_backend_api.artifact import kernel_module, kernel_symbol

    func, _ = case.build()
    target = {**CUDA_TARGET, **({"arch": case.cuda_arch} if case.cuda_arch else {})}
    context = create_backend_context(target, execution_backend="source")
    name = kernel_symbol(func)
    sources = context.emit_source(context.lower(kernel_module(func, name)))
    directory.mkdir(parents=True, exist_ok=True)
    (cu_name,) = [f for f in sources.files if f.endswith(".cu")]
    source = directory / cu_name
    source.write_text(sources.files[cu_name])
    cubin = source.with_suffix(".cubin")
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise NvccError("nvcc is not on PATH")
    arch = str(target["arch"])
    done = subprocess.run(
        [nvcc, "-cubin", f"-arch={arch}", "-O3", "-o", str(cubin), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise NvccError(f"nvcc failed on {source}: {done.stderr.strip()[-1500:]}")
    return cubin
