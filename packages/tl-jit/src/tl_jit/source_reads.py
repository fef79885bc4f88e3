"""What a function's source reads from outside itself: the names and dotted chains the
front-end key covers (`tl_jit.canonical.function_digest`, `tl_jit.digest_guard`).

The kernel parser reads a ``@T.prim_func``'s source, not its bytecode, so the key
follows the source text; a name the source binds itself (a parameter, an assignment,
a comprehension variable) is not a read from outside.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from tl_jit.source_text import dedented_source, per_code_object

__all__ = ["source_reads"]


@per_code_object
def source_reads(
    code: types.CodeType,
) -> tuple[str, frozenset[str], frozenset[tuple[str, ...]]]:
    """The source text of ``code``'s function and the names (and dotted ``name.attr...``
    chains) it reads.

    The kernel parser reads a ``@T.prim_func``'s source, not its bytecode: a name that
    appears only in a parameter annotation (a local of the builder in the bytecode, or a
    string under PEP 563) is still resolved by the parser, so the key covers every name
    the source reads from outside itself (`_GlobalReads`). Empty when the source is unavailable (``exec``, the REPL).
    """
    source = dedented_source(code)
    if source is None:
        return "", frozenset(), frozenset()
    try:
        tree = ast.parse(source)
    except (SyntaxError, IndentationError):
        return "", frozenset(), frozenset()
    reads = _GlobalReads()
    reads.visit(tree)
    return source, frozenset(reads.names), frozenset(reads.attributes)


def _bound_in(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names ``node``'s own scope binds: its parameters and what its body assigns,
    imports or defines (not inside nested functions, classes or comprehensions)."""
    arguments = node.args
    bound = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}
    bound.update(a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None)
    body = [node.body] if isinstance(node, ast.Lambda) else node.body
    pending: list[ast.AST] = list(body)
    declared_global: set[str] = set()
    while pending:
        item = pending.pop()
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Store | ast.Del):
            bound.add(item.id)
        elif isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(item.name)
            pending.extend(item.decorator_list)
            continue
        elif isinstance(item, ast.Import | ast.ImportFrom):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in item.names)
        elif isinstance(item, ast.Global | ast.Nonlocal):
            declared_global.update(item.names)
        elif isinstance(item, ast.ExceptHandler) and item.name:
            bound.add(item.name)
        if isinstance(item, (ast.Lambda, *_COMPREHENSIONS)):
            continue
        pending.extend(ast.iter_child_nodes(item))
    return bound - declared_global


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _GlobalReads(ast.NodeVisitor):
    """The names (and dotted chains, ``getattr(x, "literal")`` reads) a function's source
    reads from outside itself: a name bound in the function or one around it (a kernel's
    parameter ``A``, a builder's argument ``M``) is not a global read, so an unrelated
    module global of the same name stays out of the key."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.attributes: set[tuple[str, ...]] = set()
        self._scopes: list[set[str]] = []

    def _is_global(self, name: str) -> bool:
        return not any(name in scope for scope in self._scopes)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        # Decorators, defaults and annotations are evaluated in the enclosing scope.
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
            if node.returns is not None:
                self.visit(node.returns)
        arguments = node.args
        for default in (*arguments.defaults, *(d for d in arguments.kw_defaults if d)):
            self.visit(default)
        for argument in (
            *arguments.posonlyargs,
            *arguments.args,
            *arguments.kwonlyargs,
            *(a for a in (arguments.vararg, arguments.kwarg) if a is not None),
        ):
            if argument.annotation is not None:
                self.visit(argument.annotation)
        self._scopes.append(_bound_in(node))
        for statement in [node.body] if isinstance(node, ast.Lambda) else node.body:
            self.visit(statement)
        self._scopes.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def _comprehension(self, node: Any) -> None:
        targets = {
            name.id
            for generator in node.generators
            for name in ast.walk(generator.target)
            if isinstance(name, ast.Name)
        }
        self._scopes.append(targets)
        self.generic_visit(node)
        self._scopes.pop()

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_DictComp = _comprehension
    visit_GeneratorExp = _comprehension

    def visit_Name(self, node: ast.Name) -> None:
        if self._is_global(node.id):
            self.names.add(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _dotted_chain(node)
        if chain is not None and self._is_global(chain[0]):
            self.attributes.add(chain)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _is_getattr_of_constant(node):
            # getattr(config, "BLOCK") reads config.BLOCK (a computed name cannot be known)
            owner, literal = node.args[0], node.args[1]
            chain = (
                (owner.id,)
                if isinstance(owner, ast.Name)
                else _dotted_chain(owner)
                if isinstance(owner, ast.Attribute)
                else None
            )
            if (
                chain is not None
                and isinstance(literal, ast.Constant)
                and self._is_global(chain[0])
            ):
                self.attributes.add((*chain, str(literal.value)))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        # A quoted annotation ("T.Tensor((N,), dtype)") is parsed as an expression.
        try:
            inner = ast.parse(node.value, mode="eval")
        except SyntaxError:
            return
        self.names.update(
            n.id for n in ast.walk(inner) if isinstance(n, ast.Name) and self._is_global(n.id)
        )


def _is_getattr_of_constant(node: ast.Call) -> bool:
    """``getattr(name_or_chain, "literal"[, default])``."""
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) in (2, 3)
        and isinstance(node.args[0], ast.Name | ast.Attribute)
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def _dotted_chain(node: ast.Attribute) -> tuple[str, ...] | None:
    """``("a", "b", "c")`` for the expression ``a.b.c``; None when it does not start at a name."""
    parts = [node.attr]
    value = node.value
    while isinstance(value, ast.Attribute):
        parts.append(value.attr)
        value = value.value
    if not isinstance(value, ast.Name):
        return None
    return (value.id, *reversed(parts))
