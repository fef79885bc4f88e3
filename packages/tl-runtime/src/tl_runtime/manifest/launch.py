"""The ``launches`` of a manifest: one entry per device kernel, and the launch expressions.

A device artifact's manifest lists every device kernel in launch order: its symbol, its
device arguments in order (`LaunchArgument`), its grid and block extents and its dynamic
shared memory. Extents and sizes are ints or integer expressions over the symbolic dims of
the kernel's parameters; `evaluate_dim_expression` computes one for a call's dims (what a
launcher does), with a small AST walker, never ``eval``.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

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

LAUNCH_ARGUMENT_KINDS = ("buffer", "scalar", "dim", "workspace")
"""``buffer``: the data pointer of the tensor parameter ``name``; ``scalar``: the value of the
scalar parameter ``name``; ``dim``: the value of the symbolic dim ``name``; ``workspace``:
device memory of ``nbytes`` the launcher allocates for the call (``T.alloc_global``), shared
by the call's kernels, contents undefined at the start."""

INTEGER_DTYPES = frozenset(d for d in DTYPES if d.startswith(("int", "uint")))
"""The dtypes a ``dim`` argument may be passed as."""

MAX_LAUNCH_EXTENTS = 3
"""A grid or block has 1 to 3 extents (x, y, z)."""


MAX_EXPRESSION_LENGTH = 4096
"""The longest launch expression a manifest may hold, in characters (the ones generated
are a few dozen)."""

MAX_EXPRESSION_DEPTH = 64
"""How deeply a launch expression may nest: its syntax tree's depth, where each operator,
unary minus, ``min``/``max`` call and pair of parentheses is a level (``"((n + 127) //
128)"`` is 5 deep; ``"1 + 2 + 3"`` is 3: ``+`` groups from the left)."""

_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(//|[-+*%(),]))")
_BINARY: dict[str, Callable[[int, int], int]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
}
_FUNCTIONS = ("min", "max")
_EXPECTED = (
    "a well-formed integer expression (ints, names, + - * // %, parentheses, unary -, min, "
    f"max; at most {MAX_EXPRESSION_LENGTH} characters, nested at most {MAX_EXPRESSION_DEPTH} "
    "levels)"
)


@dataclass(frozen=True)
class _Node:
    """One node of a parsed launch expression.

    ``op``: ``"int"`` (``value`` the constant), ``"name"`` (``value`` the name), ``"neg"``,
    one of ``+ - * // %`` (two ``args``) or ``min``/``max`` (one or more ``args``); ``depth``
    is the nesting depth of the subtree (`MAX_EXPRESSION_DEPTH`).
    """

    op: str
    value: int | str = 0
    args: tuple[_Node, ...] = ()
    depth: int = 1


class _SyntaxError(ValueError):
    """A launch expression outside the grammar or its bounds (the reason is the message)."""


class _Parser:
    """A recursive-descent parser whose recursion is bounded by `MAX_EXPRESSION_DEPTH`
    (``+``/``-`` and ``*``/``//``/``%`` chains are loops, not recursion)."""

    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        position = 0
        while position < len(text):
            match = _TOKEN.match(text, position)
            if match is None:
                if not text[position:].strip():
                    break
                where = len(text) - len(text[position:].lstrip())
                raise _SyntaxError(f"unexpected character {text[where]!r} at offset {where}")
            self.tokens.append(match.group(match.lastindex or 0))
            position = match.end()
        self.position = 0

    def parse(self) -> _Node:
        node = self.expression(1)
        if self.position != len(self.tokens):
            raise _SyntaxError(f"unexpected {self.tokens[self.position]!r} after the expression")
        return node

    def peek(self) -> str:
        return self.tokens[self.position] if self.position < len(self.tokens) else ""

    def take(self) -> str:
        token = self.peek()
        if not token:
            raise _SyntaxError("the expression ends early")
        self.position += 1
        return token

    def node(self, op: str, value: int | str = 0, args: tuple[_Node, ...] = ()) -> _Node:
        depth = 1 + max((arg.depth for arg in args), default=0)
        if depth > MAX_EXPRESSION_DEPTH:
            raise _SyntaxError(f"nested deeper than {MAX_EXPRESSION_DEPTH} levels")
        return _Node(op, value, args, depth)

    def expression(self, level: int) -> _Node:
        node = self.term(level)
        while self.peek() in ("+", "-"):
            op = self.take()
            node = self.node(op, args=(node, self.term(level)))
        return node

    def term(self, level: int) -> _Node:
        node = self.unary(level)
        while self.peek() in ("*", "//", "%"):
            op = self.take()
            node = self.node(op, args=(node, self.unary(level)))
        return node

    def unary(self, level: int) -> _Node:
        if self.peek() != "-":
            return self.atom(level)
        self.take()
        return self.node("neg", args=(self.unary(self.deeper(level)),))

    def atom(self, level: int) -> _Node:
        token = self.take()
        if token.isdigit():
            return self.node("int", int(token))
        if token == "(":
            inner = self.expression(self.deeper(level))
            self.expect(")")
            return _Node(inner.op, inner.value, inner.args, self.checked(inner.depth + 1))
        if token[0].isalpha() or token[0] == "_":
            if self.peek() != "(":
                return self.node("name", token)
            if token not in _FUNCTIONS:
                raise _SyntaxError(f"a call of {token!r} (only min and max may be called)")
            self.take()
            inner_level = self.deeper(level)
            args = [self.expression(inner_level)]
            while self.peek() == ",":
                self.take()
                args.append(self.expression(inner_level))
            self.expect(")")
            return self.node(token, args=tuple(args))
        raise _SyntaxError(f"unexpected {token!r}")

    def expect(self, token: str) -> None:
        if self.peek() != token:
            raise _SyntaxError(f"expected {token!r}, found {self.peek() or 'the end'!r}")
        self.position += 1

    def deeper(self, level: int) -> int:
        return self.checked(level + 1)

    @staticmethod
    def checked(depth: int) -> int:
        if depth > MAX_EXPRESSION_DEPTH:
            raise _SyntaxError(f"nested deeper than {MAX_EXPRESSION_DEPTH} levels")
        return depth


def _shown(expression: str) -> str:
    """``expression`` quoted for a message, cut to 80 characters."""
    if len(expression) <= 80:
        return repr(expression)
    return f"{expression[:80]!r}..."


@functools.lru_cache(maxsize=1024)
def _parsed(expression: str) -> _Node:
    """The checked syntax tree of ``expression`` (parsed once per distinct text).

    Raises:
        ArtifactError: not an expression of ints, names, ``+ - * // %``, parentheses,
            unary minus, ``min``/``max``; longer than `MAX_EXPRESSION_LENGTH` characters or
            nested deeper than `MAX_EXPRESSION_DEPTH` levels.
    """
    try:
        if len(expression) > MAX_EXPRESSION_LENGTH:
            raise _SyntaxError(f"{len(expression)} characters")
        return _Parser(expression).parse()
    except _SyntaxError as exc:
        raise ArtifactError(
            f"manifest launch expression: expected {_EXPECTED}, got {_shown(expression)} ({exc})"
        ) from None


def _nodes(tree: _Node) -> list[_Node]:
    """Every node of ``tree`` (no recursion)."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.args)
    return found


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
    return frozenset(str(node.value) for node in _nodes(_parsed(expression)) if node.op == "name")


def evaluate_dim_expression(expression: Dim, bindings: Mapping[str, int]) -> int:
    """Evaluate a launch extent, a shared memory size or a workspace size for a call.

    Args:
        expression: an int (returned as is) or an integer expression over symbolic dims:
            ints, names, ``+ - * // %`` (floor division and modulo, as in Python),
            parentheses, unary minus, ``min(...)`` and ``max(...)``, e.g.
            ``"((n + 127) // 128)"``; at most `MAX_EXPRESSION_LENGTH` characters, nested
            at most `MAX_EXPRESSION_DEPTH` levels. Nothing else is evaluated (no ``eval``);
            each distinct text is parsed once per process.
        bindings: the value of every symbolic dim the expression names, each an int (a
            numpy integer too; not a bool), e.g. ``PreparedCall.bindings`` or
            ``Kernel.bind_dims(*args)``.

    Returns:
        The value as an int.

    Raises:
        ArtifactError: malformed, too long or too deeply nested expression, unsupported
            construct, a name missing from ``bindings``, or division by zero.
        TypeError: a value of ``bindings`` the expression uses is not an int (names the
            symbol and what came).
    """
    if isinstance(expression, int) and not isinstance(expression, bool):
        return expression
    if not isinstance(expression, str):
        raise fail("launch expression", "an int or an expression string", expression)
    tree = _parsed(expression)

    def bound(name: str) -> int:
        if name not in bindings:
            raise fail(
                f"launch expression {_shown(expression)}",
                f"names bound at call time {sorted(bindings)}",
                name,
            )
        value = bindings[name]
        try:
            if isinstance(value, bool):
                raise TypeError
            return operator.index(value)
        except TypeError:
            raise TypeError(
                f"evaluate_dim_expression: bindings[{name!r}]: expected an int (the value "
                f"of symbolic dim {name!r}), got {type(value).__name__} {value!r}"
            ) from None

    def walk(node: _Node) -> int:  # recursion bounded by MAX_EXPRESSION_DEPTH
        if node.op == "int":
            assert isinstance(node.value, int)
            return node.value
        if node.op == "name":
            return bound(str(node.value))
        if node.op == "neg":
            return -walk(node.args[0])
        if node.op in _FUNCTIONS:
            values = [walk(arg) for arg in node.args]
            return min(values) if node.op == "min" else max(values)
        left, right = walk(node.args[0]), walk(node.args[1])
        if node.op in _BINARY:
            return _BINARY[node.op](left, right)
        if right == 0:
            raise fail(f"launch expression {_shown(expression)}", "a non-zero divisor", 0)
        return left // right if node.op == "//" else left % right

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
            # exc names the rule broken and the expression (cut to fit the message)
            detail = str(exc).removeprefix("manifest launch expression: ")
            raise ArtifactError(f"manifest {where}: {detail}") from None
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
