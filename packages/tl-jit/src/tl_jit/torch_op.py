"""Kernels as ``torch.library`` custom ops, so ``torch.compile`` traces through them
(`JITKernel.as_torch_op`; docs/torch.md).

The op's schema comes from the kernel's manifest: the parameters not in ``out_idx`` are
its arguments (tensors, or ``float``/``int``/``bool`` scalars), those in ``out_idx`` its
results; a parameter the kernel writes in place (role ``inout``, or named in
``mutates``) is declared mutated (``Tensor(a!)``). The fake implementation computes
each result's shape and dtype from the manifest alone: a constant dim as is, a symbolic
dim from the argument tensor where it first appears (a ``SymInt`` under dynamic
shapes), so the compiler never runs the kernel to learn shapes. torch is imported
only when an op is made; tl_jit stays importable without it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tl_jit.kernel import JITKernel

_SCALAR_TYPES = {"float": "float", "int": "int", "uint": "int", "bool": "bool"}

_registered: dict[str, tuple[str, Any]] = {}
_lock = threading.Lock()


def _scalar_schema_type(dtype: str, name: str) -> str:
    for prefix, schema_type in _SCALAR_TYPES.items():
        if dtype.startswith(prefix):
            return schema_type
    raise TypeError(
        f"as_torch_op: scalar parameter {name!r} has dtype {dtype!r}; "
        "expected a float, int, uint or bool scalar"
    )


def _torch_dtype(torch: Any, dtype: str, name: str) -> Any:
    value = getattr(torch, dtype, None)
    if not isinstance(value, torch.dtype):
        raise TypeError(
            f"as_torch_op: parameter {name!r} has dtype {dtype!r}, which torch has no dtype for"
        )
    return value


def _qualified(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"as_torch_op name: expected 'namespace::op' or 'op', got {name!r}")
    namespace, sep, op = name.partition("::")
    if not sep:
        namespace, op = "tl_jit", name
    for part, what in ((namespace, "namespace"), (op, "op name")):
        if not (part.isascii() and part.isidentifier()):
            raise ValueError(
                f"as_torch_op name: the {what} must be an ASCII Python identifier, got "
                f"{part!r} (in {name!r})"
            )
    if namespace in _TORCH_NAMESPACES or namespace.startswith("_"):
        raise ValueError(
            f"as_torch_op name: the namespace {namespace!r} is torch's own (registering "
            "there replaces torch's operators for the whole process); use your project's "
            f"name, e.g. 'mylib::{op}'"
        )
    return f"{namespace}::{op}"


#: Namespaces torch's own operators live in (a custom op there collides with them).
_TORCH_NAMESPACES = frozenset(
    [
        "aten",
        "prim",
        "prims",
        "torch",
        "quantized",
        "c10d",
        "c10d_functional",
        "profiler",
        "inductor",
        "higher_order",
        "debugprims",
        "mkldnn",
        "onednn",
        "mkl",
        "xnnpack",
        "quantized_decomposed",
        "sparse",
        "rngprims",
        "fbgemm",
        "torchvision",
        "torchaudio",
        "torchao",
    ]
)


def make_torch_op(
    kernel: JITKernel, name: str, *, mutates: Sequence[str] | None = None
) -> Callable[..., Any]:
    """Register ``kernel`` as the torch custom op ``name`` and return the op.

    Args:
        kernel: the compiled kernel.
        name: ``"namespace::op"`` (``"op"`` alone means ``"tl_jit::op"``).
        mutates: names of the parameters the kernel writes in place; default: those the
            manifest gives role ``inout`` (or ``output`` without being in ``out_idx``).

    Returns:
        The op (``torch.ops.<namespace>.<op>``): call it with the non-``out_idx``
        parameters in order; it returns the ``out_idx`` outputs (one tensor, a tuple, or
        None).

    Raises:
        ImportError: torch is not installed.
        TypeError, ValueError: a bad name or ``mutates``, a parameter torch cannot
            express, a result dim no argument determines, or ``name`` already taken by
            another kernel.
    """
    import torch

    qualified = _qualified(name)
    manifest = kernel.manifest
    identity = repr(sorted((f.path, f.sha256) for f in manifest.files))
    with _lock:
        known = _registered.get(qualified)
        if known is not None:
            if known[0] != identity:
                raise ValueError(
                    f"as_torch_op name: {qualified!r} is already registered for another kernel; "
                    "choose another name"
                )
            op: Callable[..., Any] = known[1]
            return op
        if torch._C._jit_get_schemas_for_operator(qualified):
            raise ValueError(
                f"as_torch_op name: {qualified!r} is already an operator another library "
                "registered; choose another name"
            )
        op = _build_op(torch, kernel, qualified, mutates)
        _registered[qualified] = (identity, op)
        return op


def _build_op(
    torch: Any, kernel: JITKernel, qualified: str, mutates: Sequence[str] | None
) -> Callable[..., Any]:
    params = list(kernel.params)
    outputs = set(kernel.out_idx)
    arguments = [(i, p) for i, p in enumerate(params) if i not in outputs]
    argument_names = {p.name for _, p in arguments}
    if mutates is None:
        mutated = {
            p.name for _, p in arguments if p.kind == "tensor" and p.role in ("inout", "output")
        }
    else:
        if isinstance(mutates, str) or not all(isinstance(m, str) for m in mutates):
            raise TypeError(
                f"as_torch_op mutates: expected a list of parameter names, got {mutates!r}"
            )
        unknown = sorted(set(mutates) - argument_names)
        if unknown:
            raise ValueError(
                f"as_torch_op mutates: {unknown} are not parameters the caller passes "
                f"(expected some of {sorted(argument_names)})"
            )
        mutated = set(mutates)
    # Where each symbolic dim can be read: (argument position, axis), first appearance.
    symbols: dict[str, tuple[int, int]] = {}
    schema_args = []
    for position, (_, param) in enumerate(arguments):
        if not param.name.isidentifier():
            raise ValueError(f"as_torch_op: parameter name {param.name!r} is not an identifier")
        if param.kind == "scalar":
            schema_args.append(f"{_scalar_schema_type(param.dtype, param.name)} {param.name}")
            continue
        _torch_dtype(torch, param.dtype, param.name)
        for axis, dim in enumerate(param.shape):
            if isinstance(dim, str):
                symbols.setdefault(dim, (position, axis))
        alias = f"Tensor({chr(ord('a') + len([m for m in schema_args if '!' in m]))}!)"
        schema_args.append(f"{alias if param.name in mutated else 'Tensor'} {param.name}")
    results = [params[i] for i in kernel.out_idx]
    for result in results:
        _torch_dtype(torch, result.dtype, result.name)
        for dim in result.shape:
            if isinstance(dim, str) and dim not in symbols:
                raise ValueError(
                    f"as_torch_op: output {result.name!r} has dim {dim!r}, which no argument "
                    "tensor has: torch.compile could not know its size"
                )
    returns = (
        "()"
        if not results
        else "Tensor"
        if len(results) == 1
        else "(" + ", ".join("Tensor" for _ in results) + ")"
    )
    schema = f"({', '.join(schema_args)}) -> {returns}"
    runtime_call = kernel.runtime_kernel

    def run(*args: Any) -> Any:
        found = runtime_call(*args)
        if not results:
            return None
        if len(results) == 1:
            return _as_tensor(torch, found)
        return tuple(_as_tensor(torch, value) for value in found)

    def fake(*args: Any) -> Any:
        device = next((a.device for a in args if isinstance(a, torch.Tensor)), "cpu")
        made = []
        for result in results:
            shape = [
                args[symbols[dim][0]].shape[symbols[dim][1]] if isinstance(dim, str) else dim
                for dim in result.shape
            ]
            made.append(
                torch.empty(
                    shape, dtype=_torch_dtype(torch, result.dtype, result.name), device=device
                )
            )
        if not made:
            return None
        return made[0] if len(made) == 1 else tuple(made)

    op = torch.library.custom_op(
        qualified,
        run,
        mutates_args=tuple(sorted(mutated)),
        schema=schema,
    )
    op.register_fake(fake)
    return op  # type: ignore[no-any-return]


def _as_tensor(torch: Any, value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value
    return torch.from_numpy(value)
