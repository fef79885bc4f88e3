"""What an eager function declares, read from its source without running it.

An eager function (TileLang's current style) takes its tensors as arguments and
declares them in its body::

    def gemm(A, B, C, dtype: T.dtype = T.float16, block_M: int = 64):
        M, N, K = T.const("M N K")
        A: T.Tensor[[M, K], dtype]
        ...

The analysis splits the signature into kernel parameters (tensors, ``T.ptr``s,
scalars) and template parameters (everything else: compile-time values), finds the
``T.const`` and ``T.dynamic`` symbols, and the *prelude*: the statements up to the
last declaration, which run as Python before the kernel is parsed. Where each
``T.const`` is bound (the first tensor axis whose declared shape names it directly)
is read from the declarations' syntax where it can be; otherwise (a shape that is not
a literal list, a symbol named only under a prelude alias such as ``KH, KW = K, K``)
from evaluating the prelude (`tl_ir.eager.evaluate_bindings`).
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tl_ir.eager._names import split_const_names
from tl_ir.errors import KernelSyntaxError

__all__ = [
    "ConstBinding",
    "EagerSignature",
    "KernelParam",
    "analyze",
]

_TENSOR_NAMES = frozenset({"Tensor", "StridedTensor", "Buffer"})
_DECLARATION_CALLS = frozenset({"const", "dynamic", "symbolic"})
# Calls that belong to the kernel body: a statement holding one is not prelude.
_KERNEL_CALLS = frozenset(
    {"Kernel", "empty", "alloc_var", "alloc_local", "alloc_shared", "alloc_fragment"}
)

ParamKind = Literal["tensor", "strided", "ptr", "scalar"]


@dataclass(frozen=True)
class KernelParam:
    """A parameter of the eager function that is a kernel argument.

    Attributes:
        name: the parameter name.
        kind: ``tensor`` / ``strided`` (a ``T.Tensor`` / ``T.StridedTensor``
            declaration), ``ptr`` (``T.ptr`` made a tensor by ``T.make_tensor``) or
            ``scalar`` (declared with a dtype, ``x: T.float32``).
        shape: the declared shape expression (None for scalars).
        strides: the declared strides expression (``T.StridedTensor`` only).
        dtype: the declared dtype expression.
        annotation: the whole declaration expression, evaluated at build time.
    """

    name: str
    kind: ParamKind
    shape: ast.expr | None
    strides: ast.expr | None
    dtype: ast.expr | None
    annotation: ast.expr


@dataclass(frozen=True)
class ConstBinding:
    """Where a ``T.const`` symbol takes its value: ``param.shape[axis]`` (or strides)."""

    symbol: str
    param: str
    where: Literal["shape", "stride"]
    axis: int


@dataclass(frozen=True)
class EagerSignature:
    """The analysis of one eager function.

    Attributes:
        name: the function's name.
        qualname: its qualified name (for messages).
        parameters: every signature parameter, in order.
        kernel_params: the kernel parameters, in signature order.
        template_params: the compile-time parameters, in signature order.
        consts: the ``T.const`` symbols, in declaration order.
        const_variables: the Python variable holding each symbol (symbol -> name).
        bindings: where each ``T.const`` is bound, or None when a declared shape is not a
            literal list, or names a variable the prelude assigns while a symbol is
            named by no shape (then the bindings come from evaluating the prelude).
        prelude: the statements run as Python before parsing (relative line numbers).
        body: the remaining statements, parsed as the kernel body.
        function_def: the parsed function definition (relative line numbers).
    """

    name: str
    qualname: str
    parameters: tuple[inspect.Parameter, ...]
    kernel_params: tuple[KernelParam, ...]
    template_params: tuple[str, ...]
    consts: tuple[str, ...]
    const_variables: dict[str, str]
    bindings: tuple[ConstBinding, ...] | None
    prelude: tuple[ast.stmt, ...]
    body: tuple[ast.stmt, ...]
    function_def: ast.FunctionDef


def _source_tree(func: Callable[..., Any]) -> ast.FunctionDef:
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as err:
        raise KernelSyntaxError(
            f"cannot read the source of {getattr(func, '__qualname__', func)!r} ({err}); an "
            "eager kernel must be defined in a Python file"
        ) from err
    module = ast.parse(source)
    node = module.body[0] if module.body else None
    if not isinstance(node, ast.FunctionDef):
        raise KernelSyntaxError(f"{func.__qualname__}: expected a 'def' function")
    return node


def _attr_name(node: ast.expr) -> str | None:
    """``T.Tensor`` -> ``Tensor``; ``Tensor`` -> ``Tensor``."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        return _attr_name(node.func)
    return None


def _declaration(name: str, annotation: ast.expr) -> KernelParam | None:
    """The kernel parameter an annotation declares, or None (a template annotation)."""
    base: ast.expr | None = None
    items: list[ast.expr] = []
    if isinstance(annotation, ast.Subscript):
        base = annotation.value
        inner = annotation.slice
        items = list(inner.elts) if isinstance(inner, ast.Tuple) else [inner]
    elif isinstance(annotation, ast.Call):
        base = annotation.func
        items = list(annotation.args)
        for keyword in annotation.keywords:
            if keyword.arg in ("shape", "strides", "dtype"):
                items.append(keyword.value)  # order fixed below by name
    else:
        base = annotation
    kind_name = _attr_name(base) if base is not None else None
    if kind_name == "ptr":
        return KernelParam(name, "ptr", None, None, None, annotation)
    if kind_name not in _TENSOR_NAMES:
        return None
    keywords = {k.arg: k.value for k in getattr(annotation, "keywords", []) if k.arg}
    positional = (
        list(getattr(annotation, "args", items)) if isinstance(annotation, ast.Call) else items
    )
    if kind_name == "StridedTensor":
        shape = keywords.get("shape", positional[0] if positional else None)
        strides = keywords.get("strides", positional[1] if len(positional) > 1 else None)
        dtype = keywords.get("dtype", positional[2] if len(positional) > 2 else None)
        return KernelParam(name, "strided", shape, strides, dtype, annotation)
    shape = keywords.get("shape", positional[0] if positional else None)
    dtype = keywords.get("dtype", positional[1] if len(positional) > 1 else None)
    return KernelParam(name, "tensor", shape, None, dtype, annotation)


def _scalar_annotation(annotation: ast.expr) -> bool:
    """``x: T.float32`` declares a scalar kernel parameter (a dtype attribute of ``T``)."""
    from tl_ir.dtypes import DTYPE_NAMES
    from tl_ir.language._dtypes import DTYPE_ALIASES

    return (
        isinstance(annotation, ast.Attribute)
        and isinstance(annotation.value, ast.Name)
        and (annotation.attr in DTYPE_NAMES or annotation.attr in DTYPE_ALIASES)
    )


def _template_dtype(annotation: ast.expr, parameters: set[str]) -> bool:
    """``x: dtype`` declares a scalar of the dtype another parameter (a template
    parameter, ``dtype: T.dtype = T.float32``) holds; its value is checked at build."""
    return isinstance(annotation, ast.Name) and annotation.id in parameters


def _is_make_tensor_declaration(statement: ast.stmt, pointers: set[str]) -> str | None:
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id in pointers
        and _call_name(statement.value) == "make_tensor"
    ):
        call = statement.value
        assert isinstance(call, ast.Call)
        if (
            call.args
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == statement.targets[0].id
        ):
            return statement.targets[0].id
    return None


def _const_assignment(statement: ast.stmt) -> dict[str, str] | None:
    """``M, N = T.const("M N")`` -> ``{"M": "M", "N": "N"}`` (symbol -> variable)."""
    if not (isinstance(statement, ast.Assign) and _call_name(statement.value) == "const"):
        return None
    call = statement.value
    assert isinstance(call, ast.Call)
    where = f"line {statement.lineno}"
    if (
        not call.args
        or not isinstance(call.args[0], ast.Constant)
        or not isinstance(call.args[0].value, str)
    ):
        raise KernelSyntaxError(f"{where}: T.const takes a literal string of names ('M N K')")
    symbols = split_const_names(call.args[0].value)
    if len(statement.targets) != 1:
        raise KernelSyntaxError(f"{where}: assign T.const to one target")
    target = statement.targets[0]
    variables: list[str]
    if isinstance(target, ast.Name):
        variables = [target.id]
    elif isinstance(target, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Name) for e in target.elts
    ):
        variables = [e.id for e in target.elts if isinstance(e, ast.Name)]
    else:
        raise KernelSyntaxError(f"{where}: assign T.const to names (M, N = T.const('M N'))")
    if len(variables) != len(symbols):
        raise KernelSyntaxError(
            f"{where}: T.const({call.args[0].value!r}) declares {len(symbols)} symbols but is "
            f"assigned to {len(variables)} names"
        )
    return dict(zip(symbols, variables, strict=True))


def _bindings(
    params: list[KernelParam], const_variables: dict[str, str], prelude_names: set[str]
) -> tuple[ConstBinding, ...] | None:
    """The bindings read from the declarations' syntax, or None where only evaluating
    the prelude can tell: a shape that is not a literal list, or a ``T.const`` named in
    no shape by its own variable while a shape names a variable the prelude assigns
    (``KH, KW = K, K`` then ``T.Tensor((KH, KW), ...)``)."""
    variable_to_symbol = {v: s for s, v in const_variables.items()}
    found: dict[str, ConstBinding] = {}
    aliased = False
    for param in params:
        for where, node in (("shape", param.shape), ("stride", param.strides)):
            if node is None:
                continue
            if not isinstance(node, ast.List | ast.Tuple):
                if any(
                    isinstance(n, ast.Name) and n.id in variable_to_symbol for n in ast.walk(node)
                ) or isinstance(node, ast.Name):
                    return None  # not literal: resolved by evaluation
                continue
            for axis, element in enumerate(node.elts):
                if isinstance(element, ast.Name) and element.id in variable_to_symbol:
                    symbol = variable_to_symbol[element.id]
                    found.setdefault(symbol, ConstBinding(symbol, param.name, where, axis))  # type: ignore[arg-type]
                elif isinstance(element, ast.Name) and element.id in prelude_names:
                    aliased = True
    if aliased and len(found) < len(const_variables):
        return None  # a symbol may be bound under another name: resolved by evaluation
    return tuple(found[s] for s in const_variables if s in found)


def _assigned_names(statements: list[ast.stmt]) -> set[str]:
    """The names the statements assign (``KH, KW = K, K`` gives KH and KW)."""
    return {
        node.id
        for statement in statements
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }


def analyze(func: Callable[..., Any]) -> EagerSignature:
    """Read the eager declarations of ``func`` (no user code runs).

    Raises:
        KernelSyntaxError: the function cannot be read, or a declaration is malformed
            (a tensor declared after the kernel body started, ``T.const`` without a
            literal string, a parameter declared twice, ``*args``).
    """
    node = _source_tree(func)
    signature = inspect.signature(func)
    qualname = getattr(func, "__qualname__", node.name)
    for parameter in signature.parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise KernelSyntaxError(
                f"{qualname}: an eager kernel cannot take *{parameter.name} or **{parameter.name}"
            )
    declared: dict[str, KernelParam] = {}
    all_args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    for arg in all_args:
        if arg.annotation is None:
            continue
        decl = _declaration(arg.arg, arg.annotation)
        if decl is None and _scalar_annotation(arg.annotation):
            decl = KernelParam(arg.arg, "scalar", None, None, arg.annotation, arg.annotation)
        if decl is not None:
            declared[arg.arg] = decl
    arg_names = {arg.arg for arg in all_args}
    pointers = {name for name, d in declared.items() if d.kind == "ptr"}

    const_variables: dict[str, str] = {}
    last_declaration = -1
    declaration_lines: dict[int, str] = {}
    for index, statement in enumerate(node.body):
        consts = _const_assignment(statement)
        name: str | None = None
        if consts is not None:
            for symbol in consts:
                if symbol in const_variables:
                    raise KernelSyntaxError(f"{qualname}: T.const {symbol!r} declared twice")
            const_variables.update(consts)
            declaration_lines[index] = "const"
        elif (
            isinstance(statement, ast.Assign) and _call_name(statement.value) in _DECLARATION_CALLS
        ):
            declaration_lines[index] = "dynamic"
        elif (
            isinstance(statement, ast.AnnAssign)
            and statement.value is None
            and isinstance(statement.target, ast.Name)
            and statement.target.id in arg_names
        ):
            name = statement.target.id
            decl = _declaration(name, statement.annotation)
            if decl is None and (
                _scalar_annotation(statement.annotation)
                or _template_dtype(statement.annotation, arg_names - {name})
            ):
                decl = KernelParam(
                    name, "scalar", None, None, statement.annotation, statement.annotation
                )
            if decl is None:
                raise KernelSyntaxError(
                    f"{qualname}, line {statement.lineno}: parameter {name!r} is declared with "
                    f"{ast.unparse(statement.annotation)!r}; expected T.Tensor[[shape], dtype], "
                    "T.StridedTensor[[shape], [strides], dtype] or a dtype (T.float32)"
                )
            if name in declared and declared[name].kind != "ptr":
                raise KernelSyntaxError(f"{qualname}: parameter {name!r} is declared twice")
            declared[name] = decl
            declaration_lines[index] = "tensor"
        else:
            made = _is_make_tensor_declaration(statement, pointers)
            if made is not None:
                assert isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
                call = statement.value
                shape = call.args[1] if len(call.args) > 1 else None
                dtype = call.args[2] if len(call.args) > 2 else None
                for keyword in call.keywords:
                    if keyword.arg == "shape":
                        shape = keyword.value
                    elif keyword.arg == "dtype":
                        dtype = keyword.value
                annotation = ast.Call(
                    func=ast.Attribute(ast.Name("T", ast.Load()), "Tensor", ast.Load()),
                    args=[a for a in (shape, dtype) if a is not None],
                    keywords=[],
                )
                ast.copy_location(annotation, call)
                declared[made] = KernelParam(made, "tensor", shape, None, dtype, annotation)
                declaration_lines[index] = "tensor"
        if index in declaration_lines:
            last_declaration = index
    prelude: list[ast.stmt] = []
    body: list[ast.stmt] = []
    for index, statement in enumerate(node.body):
        if index > last_declaration:
            body.append(statement)
            continue
        kind = declaration_lines.get(index)
        if kind == "tensor":
            continue  # evaluated as a parameter annotation
        if kind is not None:
            prelude.append(statement)
            continue
        # A plain or annotated assignment (TileLang's `dtype: str = BF16`) among the
        # declarations is Python computing what they use.
        is_assignment = isinstance(statement, ast.Assign) or (
            isinstance(statement, ast.AnnAssign)
            and statement.value is not None
            and isinstance(statement.target, ast.Name)
        )
        if is_assignment and not any(
            _call_name(n) in ("empty", "alloc_var", "alloc_local", "alloc_shared", "alloc_fragment")
            for n in ast.walk(statement)
        ):
            prelude.append(statement)
        elif isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # docstring
        elif isinstance(statement, ast.Assert | ast.If | ast.Raise) and not any(
            _call_name(n) in _KERNEL_CALLS for n in ast.walk(statement)
        ):
            # A check or a choice on the arguments (TileLang's `if scale is None:
            # scale = ...`, `assert NK == 1`) runs as Python with the declarations.
            prelude.append(statement)
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.Expr | ast.Pass):
            body.append(statement)
        else:
            raise KernelSyntaxError(
                f"{qualname}, line {statement.lineno}: tensor and T.const declarations must "
                "come before the kernel body (found a declaration after this statement)"
            )
    unresolved_pointers = [n for n in pointers if declared[n].kind == "ptr"]
    if unresolved_pointers:
        raise KernelSyntaxError(
            f"{qualname}: T.ptr parameter {unresolved_pointers[0]!r} needs "
            f"'{unresolved_pointers[0]} = T.make_tensor({unresolved_pointers[0]}, shape, dtype)' "
            "at the top of the body"
        )
    kernel_params = [declared[arg.arg] for arg in all_args if arg.arg in declared]
    templates = tuple(arg.arg for arg in all_args if arg.arg not in declared)
    return EagerSignature(
        name=node.name,
        qualname=qualname,
        parameters=tuple(signature.parameters.values()),
        kernel_params=tuple(kernel_params),
        template_params=templates,
        consts=tuple(const_variables),
        const_variables=const_variables,
        bindings=_bindings(kernel_params, const_variables, _assigned_names(prelude)),
        prelude=tuple(prelude),
        body=tuple(body),
        function_def=node,
    )
