"""TileLang's eager style: kernels written as functions of their tensors.

``tl_jit.jit`` routes a function here when its body declares its tensors
(``A: T.Tensor[[M, K], dtype]``), binds ``T.const`` symbols, creates outputs with
``T.empty`` or opens a ``T.Kernel`` itself. This package reads the declarations
(`analyze`, no user code runs) and builds one specialization into the same IR the
``@T.prim_func`` front end produces (`build_prim_func`); binding, caching and
dispatch live in ``tl_jit.eager``.
"""

from tl_ir.eager._build import EagerKernelIR, build_prim_func, evaluate_bindings
from tl_ir.eager._macro import macro
from tl_ir.eager._names import const, empty, make_tensor, ptr
from tl_ir.eager._signature import (
    ConstBinding,
    EagerSignature,
    KernelParam,
    analyze,
)

__all__ = [
    "ConstBinding",
    "EagerKernelIR",
    "EagerSignature",
    "KernelParam",
    "analyze",
    "build_prim_func",
    "const",
    "empty",
    "evaluate_bindings",
    "macro",
    "make_tensor",
    "ptr",
]
