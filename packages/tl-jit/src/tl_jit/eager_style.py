"""Which ``@jit`` functions are written in TileLang's eager style (read from the source
alone: deciding must not import tvm, so a classic kernel's cache hit stays light)."""

from __future__ import annotations

import ast
import inspect
import types
from collections.abc import Callable
from typing import Any

from tl_jit.source_text import dedented_source

__all__ = ["is_eager_function"]

_TENSOR_ANNOTATIONS = frozenset({"Tensor", "StridedTensor", "Buffer", "ptr"})
_EAGER_CALLS = frozenset({"const", "empty", "make_tensor"})


def _name(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _call_name(node: ast.AST) -> str | None:
    return _name(node.func) if isinstance(node, ast.Call) else None


def _annotation_base(annotation: ast.expr) -> str | None:
    if isinstance(annotation, ast.Subscript):
        return _name(annotation.value)
    if isinstance(annotation, ast.Call):
        return _name(annotation.func)
    return _name(annotation)


def _definition(func: Callable[..., Any]) -> ast.FunctionDef | None:
    code = getattr(inspect.unwrap(func), "__code__", None)
    source = dedented_source(code) if isinstance(code, types.CodeType) else None
    if source is None:
        return None
    try:
        module = ast.parse(source)
    except SyntaxError:
        return None
    node = module.body[0] if module.body else None
    return node if isinstance(node, ast.FunctionDef) else None


def _returns_inner_prim_func(node: ast.FunctionDef) -> bool:
    for inner in ast.walk(node):
        if isinstance(inner, ast.FunctionDef) and inner is not node:
            for decorator in inner.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if _name(target) == "prim_func":
                    return True
    return False


def is_eager_function(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is an eager kernel: it does not define an inner
    ``@T.prim_func``, and its signature annotates a tensor (``A: T.Tensor[...]``,
    ``T.ptr``) or its body declares a parameter (``A: T.Tensor[[M, K], dtype]``),
    calls ``T.const``/``T.empty``/``T.make_tensor`` or opens ``with T.Kernel(...)``."""
    node = _definition(func)
    if node is None or _returns_inner_prim_func(node):
        return False
    arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    for arg in arguments:
        if arg.annotation is not None and _annotation_base(arg.annotation) in _TENSOR_ANNOTATIONS:
            return True
    names = {arg.arg for arg in arguments}
    for statement in node.body:
        if (
            isinstance(statement, ast.AnnAssign)
            and statement.value is None
            and isinstance(statement.target, ast.Name)
            and statement.target.id in names
        ):
            return True
        if isinstance(statement, ast.With) and any(
            _call_name(item.context_expr) == "Kernel" for item in statement.items
        ):
            return True
        if any(_call_name(inner) in _EAGER_CALLS for inner in ast.walk(statement)):
            return True
    return False
