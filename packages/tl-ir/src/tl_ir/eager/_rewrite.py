"""Source rewrites that give an eager body (and a ``T.macro``) TileLang's meaning under
the TVMScript parser, keeping every statement's line number:

* ``C = T.empty(...)`` passes its target's name, so the output parameter is named ``C``;
* ``x = value`` binds compile-time values (numbers, shape tuples such as
  ``M, N = A.shape``, dtypes, strings, ``None``, elements of Python lists and dicts
  such as ``[1, 2, 4][i]``) as Python values, not kernel variables; a tensor element
  (``x = A[i]``) stays a kernel variable;
* ``assert cond, msg`` is checked at build time when ``cond`` is known then;
* ``return C`` (last statement of an eager body) records the outputs in order.
"""

from __future__ import annotations

import ast
from typing import Any

from tl_ir.errors import KernelSyntaxError

__all__ = [
    "ASSERT_HELPER",
    "RETURN_HELPER",
    "STATIC_HELPER",
    "rewrite_statements",
]

STATIC_HELPER = "__tl_static__"
ASSERT_HELPER = "__tl_assert__"
RETURN_HELPER = "__tl_return__"


def _call(
    name: str, node: ast.AST, args: list[ast.expr], keywords: list[ast.keyword] | None = None
) -> ast.Call:
    call = ast.Call(func=ast.Name(name, ast.Load()), args=args, keywords=keywords or [])
    return ast.copy_location(call, node)


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return None


class _BodyRewriter(ast.NodeTransformer):
    def __init__(self, where: str) -> None:
        self.where = where
        self.counter = 0

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        return node  # nested helpers keep their own meaning

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        return node

    def _parallel_assignment(self, node: ast.Assign) -> list[ast.stmt] | None:
        """``a, b = b, a`` (names or elements): every value is read into a temporary
        before any target is written, as Python does."""
        target, value = node.targets[0], node.value
        if not (
            isinstance(target, ast.Tuple | ast.List)
            and isinstance(value, ast.Tuple | ast.List)
            and len(target.elts) == len(value.elts)
            and all(isinstance(t, ast.Name | ast.Subscript) for t in target.elts)
        ):
            return None
        reads: list[ast.stmt] = []
        writes: list[ast.stmt] = []
        for element, source in zip(target.elts, value.elts, strict=True):
            temporary = f"__tl_swap_{self.counter}"
            self.counter += 1
            reads.append(
                ast.copy_location(ast.Assign([ast.Name(temporary, ast.Store())], source), node)
            )
            writes.append(
                ast.copy_location(ast.Assign([element], ast.Name(temporary, ast.Load())), node)
            )
        return [self.visit_Assign(s) for s in reads + writes]  # type: ignore[arg-type]

    def visit_Assign(self, node: ast.Assign) -> Any:
        self.generic_visit(node)
        if len(node.targets) != 1:
            return node
        parallel = self._parallel_assignment(node)
        if parallel is not None:
            return parallel
        target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and _call_name(value) == "empty":
            assert isinstance(value, ast.Call)
            if not any(k.arg == "_tl_name" for k in value.keywords):
                value.keywords.append(ast.keyword("_tl_name", ast.Constant(target.id)))
            return node
        unpack = isinstance(target, ast.Tuple | ast.List)
        if not unpack and not isinstance(target, ast.Name):
            return node
        name = ast.Constant(target.id if isinstance(target, ast.Name) else None)
        node.value = _call(STATIC_HELPER, value, [value, ast.Constant(unpack), name])
        return node

    def visit_Assert(self, node: ast.Assert) -> Any:
        self.generic_visit(node)
        args = [node.test] + ([node.msg] if node.msg is not None else [])
        return ast.copy_location(ast.Expr(_call(ASSERT_HELPER, node, args)), node)

    def visit_Return(self, node: ast.Return) -> Any:
        raise KernelSyntaxError(
            f"{self.where}, line {node.lineno}: 'return' is allowed only as the last statement "
            "at the top level of an eager kernel or macro (return the T.empty outputs there)"
        )


def rewrite_statements(
    statements: list[ast.stmt], where: str, *, final_return: str | None
) -> tuple[list[ast.stmt], ast.expr | None]:
    """Rewrite ``statements`` (an eager body or a macro body).

    A ``return`` as the last statement is removed; with ``final_return`` it becomes a
    call ``final_return(value)``, else its value is handed back to the caller.

    Returns:
        The rewritten statements and the returned expression (or None).

    Raises:
        KernelSyntaxError: a ``return`` anywhere else.
    """
    returned: ast.expr | None = None
    body = list(statements)
    if body and isinstance(body[-1], ast.Return):
        last = body.pop()
        assert isinstance(last, ast.Return)
        returned = last.value if last.value is not None else ast.Constant(None)
        returned = (
            ast.copy_location(returned, last)
            if returned.__dict__.get("lineno") is None
            else returned
        )
        if final_return is not None:
            body.append(ast.copy_location(ast.Expr(_call(final_return, last, [returned])), last))
            returned = None
    rewriter = _BodyRewriter(where)
    rewritten: list[ast.stmt] = []
    for statement in body:
        result = rewriter.visit(statement)
        rewritten.extend(result if isinstance(result, list) else [result])
    for statement in rewritten:
        ast.fix_missing_locations(statement)
    if returned is not None:
        returned = rewriter.visit(returned)
    return rewritten, returned
