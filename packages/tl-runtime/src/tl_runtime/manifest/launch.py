"""The ``launches`` of a manifest: one entry per device kernel, and the launch expressions.

A device artifact's manifest lists every device kernel in launch order: its symbol, its
device arguments in order (`LaunchArgument`), its grid and block extents and its dynamic
shared memory. Extents and sizes are ints or integer expressions over the symbolic dims of
the kernel's parameters; `evaluate_dim_expression` computes one for a call's dims (what a
launcher does), with a small AST walker, never ``eval``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tl_runtime.errors import ArtifactError
from tl_runtime.manifest.fields import (
    DTYPES,
    IDENTIFIER,
    MAX_EXTENT,
    Dim,
    JSONValue,
    as_mapping,
    as_str,
    fail,
)

if TYPE_CHECKING:
    import ast

LAUNCH_ARGUMENT_KINDS = ("buffer", "scalar", "dim", "workspace")
"""``buffer``: the data pointer of the tensor parameter ``name``; ``scalar``: the value of the
scalar parameter ``name``; ``dim``: the value of the symbolic dim ``name``; ``workspace``:
device memory of ``nbytes`` the launcher allocates for the call (``T.alloc_global``), shared
by the call's kernels, contents undefined at the start."""

INTEGER_DTYPES = frozenset(d for d in DTYPES if d.startswith(("int", "uint")))
"""The dtypes a ``dim`` argument may be passed as."""

MAX_LAUNCH_EXTENTS = 3
"""A grid or block has 1 to 3 extents (x, y, z)."""


@functools.lru_cache(maxsize=1024)
def _parsed(expression: str) -> ast.expr:
    """The checked syntax tree of ``expression`` (parsed once per distinct text).

    Raises:
        ArtifactError: not an expression of ints, names, ``+ - * // %``, parentheses,
            unary minus, ``min``/``max``.
    """
    import ast  # only device launches have expressions: kept off tl_runtime's import path

    try:
        tree = ast.parse(expression, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):  # ValueError: a NUL byte
        raise fail("launch expression", "an integer expression", expression) from None
    for node in ast.walk(tree):
        allowed = (
            (isinstance(node, ast.Constant) and type(node.value) is int)
            or isinstance(node, ast.Name | ast.Load)
            or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub))
            or isinstance(node, ast.USub)
            or (
                isinstance(node, ast.BinOp)
                and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod)
            )
            or isinstance(node, ast.Add | ast.Sub | ast.Mult | ast.FloorDiv | ast.Mod)
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("min", "max")
                and bool(node.args)
                and not node.keywords
            )
        )
        if not allowed:
            raise fail(
                f"launch expression {expression!r}",
                "ints, names, + - * // %, unary -, min, max",
                ast.dump(node),
            )
    return tree


def dim_expression_names(expression: Dim) -> frozenset[str]:
    """The symbolic dim names ``expression`` uses (empty for an int).

    Raises:
        ArtifactError: ``expression`` is neither an int nor a well-formed expression
            (see `evaluate_dim_expression`).
    """
    if isinstance(expression, bool) or not isinstance(expression, int | str):
        raise fail("launch expression", "an int or an expression string", expression)
    if isinstance(expression, int):
        return frozenset()
    import ast

    tree = _parsed(expression)
    functions = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return frozenset(
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in functions
    )


def evaluate_dim_expression(expression: Dim, bindings: Mapping[str, int]) -> int:
    """Evaluate a launch extent, a shared memory size or a workspace size for a call.

    Args:
        expression: an int (returned as is) or an integer expression over symbolic dims:
            ints, names, ``+ - * // %`` (floor division and modulo, as in Python),
            parentheses, unary minus, ``min(...)`` and ``max(...)``, e.g.
            ``"((n + 127) // 128)"``. Nothing else is evaluated (no ``eval``); each
            distinct text is parsed once per process.
        bindings: the value of every symbolic dim, e.g. ``PreparedCall.bindings`` or
            ``Kernel.bind_dims(*args)``.

    Returns:
        The value as an int.

    Raises:
        ArtifactError: malformed expression, unsupported construct, a name missing from
            ``bindings``, or division by zero.
    """
    if isinstance(expression, int) and not isinstance(expression, bool):
        return expression
    if not isinstance(expression, str):
        raise fail("launch expression", "an int or an expression string", expression)
    import ast

    tree = _parsed(expression)

    def walk(node: ast.expr) -> int:
        if isinstance(node, ast.Constant):
            assert type(node.value) is int  # _parsed admits int constants only
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in bindings:
                raise fail(
                    f"launch expression {expression!r}",
                    f"names bound at call time {sorted(bindings)}",
                    node.id,
                )
            return int(bindings[node.id])
        if isinstance(node, ast.UnaryOp):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if right == 0:
                raise fail(f"launch expression {expression!r}", "a non-zero divisor", 0)
            return left // right if isinstance(node.op, ast.FloorDiv) else left % right
        assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)  # _parsed checked
        values = [walk(arg) for arg in node.args]
        return min(values) if node.func.id == "min" else max(values)

    return walk(tree)


def _check_size(where: str, value: object) -> Dim:
    """``value`` if it is an int in [0, 2**63 - 1] or a well-formed expression."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise fail(where, "an int >= 0 or an expression string", value)
    if isinstance(value, int) and not 0 <= value <= MAX_EXTENT:
        raise fail(where, "an int in [0, 2**63 - 1] or an expression string", value)
    if isinstance(value, str):
        try:
            _parsed(value)
        except ArtifactError as exc:
            raise fail(where, "a well-formed integer expression", value) from exc
    return value


@dataclass(frozen=True)
class LaunchArgument:
    """One parameter of a device kernel, in the kernel's parameter order.

    Attributes:
        kind: one of `LAUNCH_ARGUMENT_KINDS`.
        name: the tensor or scalar parameter (``buffer``, ``scalar``), the symbolic dim
            (``dim``) or the kernel's global buffer (``workspace``).
        dtype: the element dtype (``buffer``: the parameter's; ``workspace``: the
            buffer's, any dtype name) or the value's dtype (``scalar``: the parameter's;
            ``dim``: an integer dtype of `DTYPES`).
        nbytes: ``workspace`` only (and required there): its size in bytes, an int or an
            expression over symbolic dims; None for the other kinds.
    """

    kind: str
    name: str
    dtype: str
    nbytes: Dim | None = None

    def __post_init__(self) -> None:
        where = f"launch argument {self.name!r}"
        if not isinstance(self.name, str) or not IDENTIFIER.match(self.name):
            raise fail("launch argument name", "an identifier", self.name)
        if self.kind not in LAUNCH_ARGUMENT_KINDS:
            raise fail(f"{where} kind", f"one of {LAUNCH_ARGUMENT_KINDS}", self.kind)
        if not isinstance(self.dtype, str) or not IDENTIFIER.match(self.dtype):
            raise fail(f"{where} dtype", "a dtype name", self.dtype)
        if self.kind == "scalar" and self.dtype not in DTYPES:
            raise fail(f"{where} dtype", f"one of {sorted(DTYPES)}", self.dtype)
        if self.kind == "dim" and self.dtype not in INTEGER_DTYPES:
            raise fail(f"{where} dtype", f"one of {sorted(INTEGER_DTYPES)}", self.dtype)
        if self.kind == "workspace":
            if self.nbytes is None:
                raise fail(f"{where} nbytes", "the workspace's size in bytes", None)
            _check_size(f"{where} nbytes", self.nbytes)
        elif self.nbytes is not None:
            raise fail(f"{where} nbytes", "no nbytes (only a workspace has a size)", self.nbytes)

    @property
    def symbols(self) -> frozenset[str]:
        """The symbolic dims this argument needs at call time (a ``dim``'s own name, the
        names in a workspace's ``nbytes``)."""
        if self.kind == "dim":
            return frozenset({self.name})
        return frozenset() if self.nbytes is None else dim_expression_names(self.nbytes)

    def to_json(self) -> dict[str, JSONValue]:
        """Return this argument as a JSON-compatible dict (``nbytes`` only for workspaces)."""
        out: dict[str, JSONValue] = {"kind": self.kind, "name": self.name, "dtype": self.dtype}
        if self.nbytes is not None:
            out["nbytes"] = self.nbytes
        return out

    @classmethod
    def from_json(cls, data: object) -> LaunchArgument:
        """Build from the JSON dict; raises ArtifactError on any malformed field."""
        obj = as_mapping("launch argument", data)
        return cls(
            kind=as_str("launch argument kind", obj.get("kind")),
            name=as_str("launch argument name", obj.get("name")),
            dtype=as_str("launch argument dtype", obj.get("dtype")),
            nbytes=obj.get("nbytes"),
        )


@dataclass(frozen=True)
class LaunchSpec:
    """How one device kernel is launched.

    Attributes:
        symbol: the device kernel's symbol in the artifact's library.
        grid: 1 to 3 grid extents, each an int or an expression over symbolic dims.
        block: 1 to 3 block (thread) extents, same form.
        dynamic_shared_memory: bytes of dynamic shared memory (int or expression).
        arguments: the device kernel's parameters, in order.
    """

    symbol: str
    grid: tuple[Dim, ...] = (1,)
    block: tuple[Dim, ...] = (1,)
    dynamic_shared_memory: Dim = 0
    arguments: tuple[LaunchArgument, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.symbol, str) or not IDENTIFIER.match(self.symbol):
            raise fail("launch symbol", "a C identifier", self.symbol)
        where = f"launch {self.symbol!r}"
        for name in ("grid", "block"):
            value = getattr(self, name)
            if isinstance(value, str | bytes) or not isinstance(value, tuple | list):
                raise fail(f"{where} {name}", "a list of extents", value)
            dims = tuple(value)
            object.__setattr__(self, name, dims)
            if not 1 <= len(dims) <= MAX_LAUNCH_EXTENTS:
                raise fail(f"{where} {name}", f"1 to {MAX_LAUNCH_EXTENTS} extents", list(dims))
            for axis, dim in enumerate(dims):
                _check_size(f"{where} {name}[{axis}]", dim)
        _check_size(f"{where} dynamic_shared_memory", self.dynamic_shared_memory)
        arguments = self.arguments
        if isinstance(arguments, str | bytes) or not isinstance(arguments, tuple | list):
            raise fail(f"{where} arguments", "a list of launch arguments", arguments)
        object.__setattr__(self, "arguments", tuple(arguments))
        for argument in self.arguments:
            if not isinstance(argument, LaunchArgument):
                raise fail(f"{where} arguments", "LaunchArgument items", argument)

    @property
    def symbols(self) -> frozenset[str]:
        """Every symbolic dim this launch needs at call time (extents, shared memory,
        ``dim`` arguments, workspace sizes)."""
        names: set[str] = set()
        for dim in (*self.grid, *self.block, self.dynamic_shared_memory):
            names |= dim_expression_names(dim)
        for argument in self.arguments:
            names |= argument.symbols
        return frozenset(names)

    def resolve(self, bindings: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """Evaluate grid, block and dynamic shared memory for the given symbolic dim values
        (`evaluate_dim_expression` on each).

        Returns:
            ``(grid, block, dynamic_shared_memory)`` as ints.

        Raises:
            ArtifactError: an expression uses an unbound name or divides by zero.
        """
        grid = tuple(evaluate_dim_expression(d, bindings) for d in self.grid)
        block = tuple(evaluate_dim_expression(d, bindings) for d in self.block)
        return grid, block, evaluate_dim_expression(self.dynamic_shared_memory, bindings)

    def to_json(self) -> dict[str, JSONValue]:
        """Return this launch as a JSON-compatible dict."""
        return {
            "symbol": self.symbol,
            "grid": list(self.grid),
            "block": list(self.block),
            "dynamic_shared_memory": self.dynamic_shared_memory,
            "arguments": [argument.to_json() for argument in self.arguments],
        }

    @classmethod
    def from_json(cls, data: object) -> LaunchSpec:
        """Build from the JSON dict; raises ArtifactError on any malformed field."""
        obj = as_mapping("launch", data)
        symbol = as_str("launch symbol", obj.get("symbol"))
        lists = {}
        for name in ("grid", "block", "arguments"):
            value = obj.get(name)
            if not isinstance(value, list):
                raise fail(f"launch {symbol!r} {name}", "a list", value)
            lists[name] = value
        if "dynamic_shared_memory" not in obj:
            raise fail(f"launch {symbol!r} dynamic_shared_memory", "an int or expression", None)
        return cls(
            symbol=symbol,
            grid=tuple(lists["grid"]),
            block=tuple(lists["block"]),
            dynamic_shared_memory=obj["dynamic_shared_memory"],
            arguments=tuple(LaunchArgument.from_json(a) for a in lists["arguments"]),
        )
