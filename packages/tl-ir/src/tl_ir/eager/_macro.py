"""``T.macro``: a helper whose body is parsed in place at each call, with TileLang's
meaning: it may return a value (its last statement, ``return x``), shapes read from
its tensor arguments are compile-time values (``M, N = A.shape``), a build-time
``assert`` is checked when the macro expands, and it may create outputs with
``T.empty``."""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable
from typing import Any

from tvm.script.parser._core import scan_macro, utils
from tvm.script.parser.core import doc
from tvm.script.parser.tirx.entry import TIRMacro
from tvm.tirx.script.builder import block_name_suffix_context

from tl_ir.eager._names import eager_assert, static_value
from tl_ir.eager._rewrite import ASSERT_HELPER, STATIC_HELPER, rewrite_statements
from tl_ir.errors import KernelSyntaxError

__all__ = ["macro"]


class _Macro(TIRMacro):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A parameter shadows a module global of the same name, as in Python; the
        # parser adds captured names and arguments to one frame and refuses a name
        # bound twice to different values.
        parameters = inspect.signature(self.func).parameters
        self.closure_vars: dict[str, Any] = {
            name: value for name, value in self.closure_vars.items() if name not in parameters
        }
        self.closure_vars[STATIC_HELPER] = static_value
        self.closure_vars[ASSERT_HELPER] = eager_assert
        self._parsed: tuple[list[Any], Any] | None = None

    def _rewritten(self) -> tuple[list[Any], Any]:
        if self._parsed is None:
            definition = doc.from_doc(self.get_macro_def())
            assert isinstance(definition, ast.FunctionDef)
            statements, returned = rewrite_statements(
                list(definition.body), f"macro {self.func.__qualname__}", final_return=None
            )
            body = [doc.to_doc(s) for s in statements]
            self._parsed = (body, None if returned is None else doc.to_doc(returned))
        return self._parsed

    def parse_macro(self, parser: Any) -> Any:
        body, returned = self._rewritten()
        suffix = f"_{self.call_count}" if self.call_count > 0 else ""
        self.call_count += 1
        with block_name_suffix_context(suffix):
            parser.visit_body(body)
            if returned is None:
                return None
            return parser.eval_expr(returned)


def macro(func: Callable[..., Any] | None = None, *, hygienic: bool = True) -> Any:
    """Decorate a kernel helper: ``@T.macro`` (or ``@T.macro(hygienic=False)``).

    A call from a kernel body (classic or eager) expands the helper's body there;
    ``return value`` as its last statement gives the call's value.

    Raises:
        KernelSyntaxError: ``func`` is not a Python function.
    """

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        if not inspect.isfunction(function):
            raise KernelSyntaxError(f"@T.macro: expected a Python function, got {function!r}")
        source, closure_vars = scan_macro(function, utils.inspect_function_capture(function))
        expander = _Macro(source, closure_vars, function, hygienic)

        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            return expander(*args, **kwargs)

        return call

    if func is None:
        return decorate
    return decorate(func)


macro.dispatch_token = "tir.macro"  # type: ignore[attr-defined]
