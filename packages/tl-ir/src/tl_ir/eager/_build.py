"""Building one specialization of an eager function into a PrimFunc.

The prelude (``T.const``/``T.dynamic`` and the statements before the last tensor
declaration) runs as Python with the template arguments and the bound ``T.const``
values; each declaration is evaluated into the parameter's buffer; the rest of the
body is rewritten (_rewrite) and parsed by the same TVMScript parser, diagnostics and
finalization as a ``@T.prim_func`` (tl_ir.frontend). The result is the classic
front end's IR: tensor parameters in signature order, then the ``T.empty`` outputs
in ``return`` order.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tvm import tirx
from tvm.script.ir_builder import IRBuilder
from tvm.script.parser.core import doc
from tvm.script.parser.core import utils as _parser_utils
from tvm.script.parser.core.diagnostics import Source
from tvm.script.parser.core.parser import Parser

from tl_ir import frontend as _frontend
from tl_ir.eager._context import EagerBuildState, active_build
from tl_ir.eager._names import eager_assert, eager_return, static_value
from tl_ir.eager._rewrite import (
    ASSERT_HELPER,
    RETURN_HELPER,
    STATIC_HELPER,
    rewrite_statements,
)
from tl_ir.eager._signature import EagerSignature, KernelParam
from tl_ir.errors import KernelSyntaxError, KernelTypeError, TileLangError

__all__ = ["EagerKernelIR", "build_prim_func", "evaluate_bindings"]

_DECORATOR = "__tl_prim_func__"


@dataclass(frozen=True)
class EagerKernelIR:
    """One specialization of an eager function.

    Attributes:
        prim_func: the kernel (inputs in signature order, then the outputs).
        out_idx: the indices of the outputs (``T.empty``) among its parameters.
        input_names: the kernel parameters the caller passes, in order.
    """

    prim_func: Any
    out_idx: tuple[int, ...]
    input_names: tuple[str, ...]


class _EagerSource(Source):  # type: ignore[misc]
    """The function's own source (for locations) with the rewritten definition."""

    def __init__(self, func: Callable[..., Any], definition: ast.FunctionDef) -> None:
        super().__init__(func)
        self._definition = definition

    def as_ast(self) -> Any:
        module = ast.Module(body=[self._definition], type_ignores=[])
        return doc.to_doc(module)


def _namespace(func: Callable[..., Any], template_args: Mapping[str, Any]) -> dict[str, Any]:
    namespace: dict[str, Any] = dict(getattr(func, "__globals__", {}))
    namespace.update(_parser_utils.get_func_nonlocals(func))
    namespace.update(template_args)
    namespace[STATIC_HELPER] = static_value
    namespace[ASSERT_HELPER] = eager_assert
    namespace[RETURN_HELPER] = eager_return
    namespace[_DECORATOR] = _frontend.prim_func
    return namespace


def _absolute(node: ast.AST, first_line: int) -> ast.AST:
    moved = copy.deepcopy(node)
    ast.increment_lineno(moved, first_line - 1)
    return moved


def _run_prelude(
    signature: EagerSignature, namespace: dict[str, Any], filename: str, first_line: int
) -> None:
    if not signature.prelude:
        return
    module = ast.Module(
        body=[_absolute(s, first_line) for s in signature.prelude],  # type: ignore[misc]
        type_ignores=[],
    )
    exec(compile(module, filename, "exec"), namespace)


def _evaluate(node: ast.expr, namespace: dict[str, Any], filename: str, first_line: int) -> Any:
    expression = ast.Expression(body=_absolute(node, first_line))  # type: ignore[arg-type]
    return eval(compile(expression, filename, "eval"), namespace)


def _parameter_value(
    param: KernelParam, namespace: dict[str, Any], filename: str, first_line: int, qualname: str
) -> Any:
    from tl_ir.language._params import Tensor

    try:
        if param.kind == "scalar":
            return _evaluate(param.annotation, namespace, filename, first_line)
        assert param.shape is not None
        shape = _evaluate(param.shape, namespace, filename, first_line)
        dtype = (
            "float32"
            if param.dtype is None
            else _evaluate(param.dtype, namespace, filename, first_line)
        )
        if param.kind == "strided":
            assert param.strides is not None
            strides = tuple(_evaluate(param.strides, namespace, filename, first_line))
            dims = tuple(shape) if isinstance(shape, list | tuple) else (shape,)
            if len(strides) != len(dims):
                raise KernelTypeError(
                    f"T.StridedTensor: expected one stride per dim, got shape {dims} and "
                    f"strides {strides}"
                )
            return Tensor(dims, dtype, strides=strides)
        return Tensor(shape, dtype)
    except TileLangError as err:
        if not err.located:
            line = first_line + param.annotation.lineno - 1
            err.locate(filename, line, None)
        raise
    except Exception as err:
        raise KernelTypeError(
            f"{qualname}: the declaration of parameter {param.name!r} "
            f"({ast.unparse(param.annotation)}) could not be evaluated: "
            f"{type(err).__name__}: {err}",
            filename=filename,
            lineno=first_line + param.annotation.lineno - 1,
        ) from err


def _definition(signature: EagerSignature, namespace: dict[str, Any]) -> ast.FunctionDef:
    original = signature.function_def
    args = []
    for index, param in enumerate(signature.kernel_params):
        placeholder = f"__tl_param_{index}__"
        arg = ast.arg(arg=param.name, annotation=ast.Name(placeholder, ast.Load()))
        args.append(ast.copy_location(arg, original))
    body, _ = rewrite_statements(
        [copy.deepcopy(s) for s in signature.body], signature.qualname, final_return=RETURN_HELPER
    )
    if not body:
        body = [ast.copy_location(ast.Pass(), original)]
    definition = ast.FunctionDef(
        name=original.name,
        args=ast.arguments(posonlyargs=[], args=args, kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=body,
        decorator_list=[ast.copy_location(ast.Name(_DECORATOR, ast.Load()), original)],
        returns=None,
        type_comment=None,
    )
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        setattr(definition, "type_params", [])  # noqa: B010 - absent before 3.12
    ast.copy_location(definition, original)
    ast.fix_missing_locations(definition)
    return definition


def _location(func: Callable[..., Any]) -> tuple[str, int]:
    code = getattr(func, "__code__", None)
    if code is None:
        return "<unknown>", 1
    import inspect

    try:
        _, first = inspect.getsourcelines(func)
    except (OSError, TypeError):
        first = int(code.co_firstlineno)
    return str(code.co_filename), int(first)


def evaluate_bindings(
    func: Callable[..., Any],
    signature: EagerSignature,
    template_args: Mapping[str, Any],
) -> dict[str, tuple[str, str, int]]:
    """Where each ``T.const`` is bound, found by running the prelude with placeholder
    symbols (for declarations whose shapes are not literal lists).

    Returns:
        ``{symbol: (param, "shape" | "stride", axis)}`` for the symbols used directly.
    """
    filename, first_line = _location(func)
    placeholders = {name: tirx.Var(name, "int32") for name in signature.consts}
    namespace = _namespace(func, template_args)
    found: dict[str, tuple[str, str, int]] = {}
    _frontend._LOCAL.states.append(_frontend.ParseState())
    try:
        with active_build(EagerBuildState(signature.qualname, placeholders)):
            _run_prelude(signature, namespace, filename, first_line)
            for param in signature.kernel_params:
                if param.kind == "scalar":
                    continue
                value = _parameter_value(param, namespace, filename, first_line, signature.qualname)
                for where, dims in (("shape", value.ty.shape), ("stride", value.ty.strides or ())):
                    for axis, dim in enumerate(dims):
                        for symbol, var in placeholders.items():
                            if dim.same_as(var):
                                found.setdefault(symbol, (param.name, where, axis))
    finally:
        _frontend._LOCAL.states.pop()
    return found


def build_prim_func(
    func: Callable[..., Any],
    signature: EagerSignature,
    template_args: Mapping[str, Any],
    consts: Mapping[str, int],
    *,
    check_well_formed: bool = True,
) -> EagerKernelIR:
    """Build the kernel of ``func`` for these template arguments and ``T.const`` values.

    Raises:
        TileLangError: a subclass locating the first error in the kernel's source
            (also: outputs from ``T.empty`` that are not returned).
    """
    filename, first_line = _location(func)
    namespace = _namespace(func, template_args)
    state = _frontend.ParseState()
    build = EagerBuildState(signature.qualname, dict(consts))
    _frontend._LOCAL.states.append(state)
    try:
        with active_build(build):
            _run_prelude(signature, namespace, filename, first_line)
            for index, param in enumerate(signature.kernel_params):
                namespace[f"__tl_param_{index}__"] = _parameter_value(
                    param, namespace, filename, first_line, signature.qualname
                )
            definition = _definition(signature, namespace)
            source = _EagerSource(func, definition)
            _frontend._reject_try_statements(source, filename)
            parser = Parser(source, {signature.name: {}})
            parser.diag = _frontend._KernelDiagnostics(source)
            try:
                with IRBuilder() as builder:
                    parser.parse(extra_vars=namespace)
                result = builder.get()
            except TileLangError:
                raise
            except Exception as err:
                raise KernelSyntaxError(
                    f"kernel {signature.qualname!r} could not be built: {str(err).strip()}",
                    filename=filename,
                    lineno=first_line,
                ) from err
            if check_well_formed:
                import tvm

                try:
                    tvm.tirx.analysis.verify_tirx_well_formed(result)
                except Exception as err:
                    raise KernelSyntaxError(
                        f"kernel {signature.qualname!r} is not well-formed TIR: {str(err).strip()}",
                        filename=filename,
                        lineno=first_line,
                    ) from err
    finally:
        _frontend._LOCAL.states.pop()
    result = _frontend._finalize(result, state, func)
    return _order_outputs(result, build, signature, filename, first_line)


def _order_outputs(
    prim_func: Any, build: EagerBuildState, signature: EagerSignature, filename: str, line: int
) -> EagerKernelIR:
    outputs = [buffer for _, buffer in build.outputs]
    returned = build.returned or []
    missing = [
        name for name, buffer in build.outputs if not any(buffer.same_as(r) for r in returned)
    ]
    if missing:
        raise KernelSyntaxError(
            f"{signature.qualname}: every tensor created with T.empty must be returned "
            f"(return {', '.join(n for n, _ in build.outputs)}); not returned: "
            f"{', '.join(missing)}",
            filename=filename,
            lineno=line,
        )
    if len({id(r) for r in returned}) != len(returned) or len(returned) != len(outputs):
        raise KernelSyntaxError(
            f"{signature.qualname}: each T.empty output must be returned exactly once",
            filename=filename,
            lineno=line,
        )
    params = list(prim_func.params)
    inputs = [p for p in params if not any(p.same_as(o) for o in outputs)]
    ordered_outputs = [next(p for p in params if p.same_as(r)) for r in returned]
    if ordered_outputs and params != inputs + ordered_outputs:
        prim_func = tirx.PrimFunc(
            inputs + ordered_outputs, prim_func.body, prim_func.ret_type, prim_func.attrs
        )
    out_idx = tuple(range(len(inputs), len(inputs) + len(ordered_outputs)))
    return EagerKernelIR(prim_func, out_idx, tuple(p.name for p in signature.kernel_params))
