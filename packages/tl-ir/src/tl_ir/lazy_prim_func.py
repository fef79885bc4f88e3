"""TileLang's lazy ``@T.prim_func``: a kernel in the eager style (parameters declared in
the body, outputs made with ``T.empty`` and returned) under ``@T.prim_func``, built
into a PrimFunc at once, its outputs recorded for `tl_jit.compile`; and the refusal of
the other eager-only form, ``T.ptr`` parameters, by name."""

from __future__ import annotations

import inspect
from typing import Any

from tl_ir.errors import KernelSyntaxError

__all__ = ["OUT_IDX_ATTR", "build_lazy", "is_lazy_style", "refuse_pointer_parameters"]


OUT_IDX_ATTR = "tilelang_out_idx"
"""The PrimFunc attribute (TileLang's name) holding the outputs of a kernel written in the
eager style under ``@T.prim_func``: negative parameter indices; `tl_jit.compile` takes
it as ``out_idx`` when none is given."""


def is_lazy_style(func: Any) -> bool:
    """TileLang's lazy ``@T.prim_func``: a parameter without an annotation (declared in
    the body, ``A: T.Tensor[...]``, as eager kernels are)."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.annotation is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        for p in parameters
    )


def build_lazy(func: Any, check_well_formed: bool) -> Any:
    """Build a lazy ``@T.prim_func`` as the eager style builds a specialization: every
    size a constant or ``T.dynamic``, other parameters at their defaults; the outputs
    (``T.empty`` returned) recorded in `OUT_IDX_ATTR`."""
    from tl_ir.eager import analyze, build_prim_func

    signature = analyze(func)
    qualname = signature.qualname
    if signature.consts:
        raise KernelSyntaxError(
            f"@T.prim_func {qualname}: T.const sizes ({', '.join(signature.consts)}) are "
            "read from the tensors of a call; decorate the function with @tl_jit.jit instead"
        )
    defaults: dict[str, Any] = {}
    for parameter in signature.parameters:
        if parameter.name not in signature.template_params:
            continue
        if parameter.default is inspect.Parameter.empty:
            raise KernelSyntaxError(
                f"@T.prim_func {qualname}: parameter {parameter.name!r} is neither declared "
                "in the body (A: T.Tensor[...]) nor given a default; decorate the function "
                "with @tl_jit.jit to pass it at the call"
            )
        defaults[parameter.name] = parameter.default
    built = build_prim_func(func, signature, defaults, {}, check_well_formed=check_well_formed)
    count = len(built.prim_func.params)
    return built.prim_func.with_attr(OUT_IDX_ATTR, [index - count for index in built.out_idx])


def refuse_pointer_parameters(func: Any) -> None:
    """Refuse a classic ``@T.prim_func`` parameter annotated ``T.ptr`` by name: a raw
    pointer carries no shape the call could be checked against (TVM's parser said only
    "Unexpected type for TIR Arg").

    Raises:
        KernelSyntaxError: naming the parameter and the two spellings that work.
    """
    from tl_ir.eager import ptr

    for name, annotation in getattr(func, "__annotations__", {}).items():
        spelled = annotation.rsplit(".", 1)[-1] if isinstance(annotation, str) else None
        if annotation is ptr or spelled == "ptr":
            raise KernelSyntaxError(
                f"@T.prim_func {func.__qualname__}: parameter {name!r} is annotated T.ptr; a "
                "classic kernel takes tensors with their shapes (declare it "
                f"{name}: T.Tensor(shape, dtype)); a raw pointer made a tensor in the body "
                f"is the eager style: under @tl_jit.jit, write {name} = T.make_tensor({name}, "
                "shape, dtype) at the top of the body"
            )
