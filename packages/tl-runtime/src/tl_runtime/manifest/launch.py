"""The launch section of a manifest (grid, block, shared memory) and its expressions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tl_runtime.manifest.fields import Dim, JSONValue, as_mapping, fail


@dataclass(frozen=True)
class LaunchSpec:
    """Launch metadata for GPU targets.

    Attributes:
        grid: up to 3 grid extents, each an int or an expression string over symbolic dims.
        block: up to 3 block extents (ints or expressions).
        dynamic_shared_memory: bytes of dynamic shared memory (int or expression).
        extra: free-form, JSON-compatible extra fields a GPU adapter needs.
    """

    grid: tuple[Dim, ...] = (1, 1, 1)
    block: tuple[Dim, ...] = (1, 1, 1)
    dynamic_shared_memory: Dim = 0
    extra: Mapping[str, JSONValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("grid", "block"):
            dims = tuple(getattr(self, name))
            object.__setattr__(self, name, dims)
            if not 1 <= len(dims) <= 3:
                raise fail(f"launch {name}", "1 to 3 extents", dims)
            for d in dims:
                if isinstance(d, bool) or not isinstance(d, int | str):
                    raise fail(f"launch {name}", "ints or expression strings", dims)
        shm = self.dynamic_shared_memory
        if isinstance(shm, bool) or not isinstance(shm, int | str):
            raise fail("launch dynamic_shared_memory", "an int or expression string", shm)
        object.__setattr__(self, "extra", dict(self.extra))

    def resolve(self, bindings: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...], int]:
        """Evaluate grid, block and dynamic shared memory for the given symbolic dim values.

        Expressions may use ints, symbolic dim names, ``+ - * // % ( )``, unary minus,
        ``min(...)`` and ``max(...)``; nothing else is evaluated (no ``eval``).

        Returns:
            ``(grid, block, dynamic_shared_memory)`` as ints.

        Raises:
            ArtifactError: an expression is malformed or uses an unbound name.
        """
        grid = tuple(evaluate_dim_expression(d, bindings) for d in self.grid)
        block = tuple(evaluate_dim_expression(d, bindings) for d in self.block)
        return grid, block, evaluate_dim_expression(self.dynamic_shared_memory, bindings)

    def to_json(self) -> dict[str, JSONValue]:
        """Return the launch section as a JSON-compatible dict."""
        return {
            "grid": list(self.grid),
            "block": list(self.block),
            "dynamic_shared_memory": self.dynamic_shared_memory,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_json(cls, data: object) -> LaunchSpec:
        """Build from the JSON dict; raises ArtifactError on any malformed field."""
        obj = as_mapping("launch", data)
        grid, block = obj.get("grid", [1, 1, 1]), obj.get("block", [1, 1, 1])
        if not isinstance(grid, list) or not isinstance(block, list):
            raise fail("launch grid/block", "lists", (grid, block))
        return cls(
            grid=tuple(grid),
            block=tuple(block),
            dynamic_shared_memory=obj.get("dynamic_shared_memory", 0),
            extra=as_mapping("launch extra", obj.get("extra", {})),
        )


def evaluate_dim_expression(expression: Dim, bindings: Mapping[str, int]) -> int:
    """Evaluate an int or an integer expression over symbolic dims (see ``LaunchSpec.resolve``).

    Raises:
        ArtifactError: malformed expression, unsupported construct, unbound name, or
            division by zero.
    """
    if isinstance(expression, int):
        return expression
    import ast  # only GPU launches evaluate expressions: keep it off the import path

    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError:
        raise fail("launch expression", "an integer expression", expression) from None

    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in bindings:
                raise fail(
                    f"launch expression {expression!r}",
                    f"names bound at call time {sorted(bindings)}",
                    node.id,
                )
            return int(bindings[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        if isinstance(node, ast.BinOp):
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.FloorDiv | ast.Mod):
                if right == 0:
                    raise fail(f"launch expression {expression!r}", "a non-zero divisor", 0)
                return left // right if isinstance(node.op, ast.FloorDiv) else left % right
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max")
            and node.args
            and not node.keywords
        ):
            values = [walk(arg) for arg in node.args]
            return min(values) if node.func.id == "min" else max(values)
        raise fail(
            f"launch expression {expression!r}",
            "ints, names, + - * // %, min, max",
            ast.dump(node),
        )

    return walk(tree.body)
