"""``TL_INTERPRET=1``: kernels run by tl_ir's reference interpreter instead of compiled.

Like ``TRITON_INTERPRET=1``: every ``tl_jit.jit`` / ``tl_jit.compile`` kernel becomes an
`InterpretedKernel`, which runs the kernel's IR in numpy (`tl_ir.interpret.run`), one
block after another. Nothing is compiled or cached; an out-of-bounds index raises
`IndexError` naming the buffer, the index, the extent and the kernel's file:line. It is
slow and covers what the interpreter covers (a construct it does not raises
`NotImplementedError` naming it): a tool to debug a kernel, not to run one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

INTERPRET_ENV = "TL_INTERPRET"
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})


def interpret_requested() -> bool:
    """Whether ``TL_INTERPRET`` is set to anything but 0/false/no/off/empty."""
    return os.environ.get(INTERPRET_ENV, "").strip().lower() not in _FALSE_WORDS


class InterpretedKernel:
    """A kernel run by the interpreter; called like a `JITKernel`.

    Attributes:
        prim_func: the kernel's PrimFunc.
        out_idx: the parameters the call allocates and returns.
        name: the kernel's name.
    """

    def __init__(self, prim_func: Any, out_idx: Sequence[int]) -> None:
        self.prim_func = prim_func
        self.out_idx = tuple(out_idx)
        self.name = str(prim_func.attrs["global_symbol"]) if prim_func.attrs else "main"

    def __call__(self, *args: Any) -> Any:
        """Run the kernel on numpy arrays (or anything ``numpy.asarray`` shares memory with).

        Returns:
            None, the output array, or a tuple of them (``out_idx``), as a `JITKernel`.

        Raises:
            TypeError: the wrong number of arguments.
            ValueError: an argument's shape or dtype does not match its parameter.
            IndexError: an out-of-bounds index (buffer, index, extent, file:line).
            NotImplementedError: a construct the interpreter does not cover.
        """
        import numpy as np
        import tvm
        from tvm import tirx

        from tl_ir.dtypes import compute_dtype
        from tl_ir.interpret import run
        from tl_ir.interpret_args import tensor_array

        params = list(self.prim_func.params)
        expected = len(params) - len(self.out_idx)
        if len(args) != expected:
            raise TypeError(f"{self.name}: expected {expected} arguments, got {len(args)}")
        supplied = iter(args)
        full: list[Any] = [
            None if i in self.out_idx else next(supplied) for i in range(len(params))
        ]
        sizes: dict[str, int] = {}
        for param, value in zip(params, full, strict=True):
            ty = param.ty
            if value is None or not isinstance(ty, tirx.BufferType):
                continue
            for dim, size in zip(ty.shape, np.shape(value), strict=False):
                if isinstance(dim, tvm.ir.Var):
                    sizes[str(dim.name)] = int(size)
        for index in self.out_idx:
            ty = params[index].ty
            shape = []
            for dim in ty.shape:
                if isinstance(dim, tvm.ir.Var):
                    if str(dim.name) not in sizes:
                        raise NotImplementedError(
                            f"{self.name}: output {params[index].name!r} has dim {dim.name!r} "
                            "that no input's shape gives; pass the output yourself"
                        )
                    shape.append(sizes[str(dim.name)])
                else:
                    shape.append(int(dim))
            full[index] = np.zeros(shape, dtype=compute_dtype(str(ty.dtype)))
        # torch bfloat16/float8 tensors, which numpy cannot view, become their bits
        # under the ml_dtypes type of the same name.
        arrays = [
            tensor_array(v) if isinstance(p.ty, tirx.BufferType) else v
            for p, v in zip(params, full, strict=True)
        ]
        run(self.prim_func, arrays)
        outputs = [arrays[i] for i in self.out_idx]
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __repr__(self) -> str:
        return f"<tl_jit InterpretedKernel {self.name} (TL_INTERPRET)>"

    def __getattr__(self, attribute: str) -> Any:
        # Called only for what this class lacks: a compiled kernel's artifact, source,
        # profiler, export... A dunder stays a plain AttributeError (copy and pickle
        # probe those).
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise NotInterpretedError(
            f"{self.name}.{attribute}: a kernel run by the interpreter ({INTERPRET_ENV}=1) "
            "is never compiled, so it has no artifact, source, profiler or export; it can "
            f"only be called. Unset {INTERPRET_ENV} for the compiled kernel"
        )


class NotInterpretedError(NotImplementedError, AttributeError):
    """What an `InterpretedKernel` lacks (a `NotImplementedError`; an `AttributeError`
    too, so ``hasattr`` and ``getattr(kernel, name, default)`` answer as for a missing
    attribute)."""
