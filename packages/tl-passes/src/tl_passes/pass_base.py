"""The `Pass` base class and the context every pass run receives."""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import tvm
from tvm import tirx

_KEBAB_CASE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")


def is_kebab_case(name: str) -> bool:
    """Return whether ``name`` is a kebab-case pass name (``lower-tile-copy``)."""
    return bool(_KEBAB_CASE.match(name))


@dataclass(frozen=True)
class PassContext:
    """What a pass may know about the compilation it runs in.

    Args:
        target: the TVM target being compiled for, or ``None`` for a
            target-neutral run.
        options: free-form pass configuration (copied and exposed read-only).
    """

    target: tvm.target.Target | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))


@dataclass(frozen=True)
class Pass(abc.ABC):
    """A module-to-module transformation with a kebab-case ``name``.

    Subclasses are frozen dataclasses whose fields are the pass's options and
    which set the class attribute ``name``. ``run`` must not mutate its input
    (TVM IR is immutable anyway) and returns the transformed module.
    """

    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is not None and not (isinstance(name, str) and is_kebab_case(name)):
            raise TypeError(
                f"pass class {cls.__qualname__}: `name` must be a kebab-case string "
                f"(like 'lower-tile-copy'), got {name!r}"
            )

    @abc.abstractmethod
    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Transform ``mod`` and return the result.

        Args:
            mod: the module to transform.
            ctx: the compilation context (target, options).

        Returns:
            The transformed module (may be ``mod`` itself when nothing changed).
        """


class PrimFuncPass(Pass):
    """A pass applied to each `tirx.PrimFunc` of a module independently.

    The base owns the per-function loop: `run` visits every PrimFunc (other
    functions are left alone), calls `transform_function` and rebuilds the
    module with only the functions that changed (an unchanged module is
    returned as is). Subclasses override either `transform_body`, when the
    pass rewrites the function body only, or `transform_function`, when it also
    changes attributes or the signature. `applies_to` lets a pass skip a whole
    compilation (returning the input module untouched).
    """

    def applies_to(self, ctx: PassContext) -> bool:
        """Return whether this pass runs in ``ctx`` (default: always)."""
        return True

    def run(self, mod: tvm.IRModule, ctx: PassContext) -> tvm.IRModule:
        """Apply `transform_function` to every PrimFunc of ``mod``.

        Returns:
            ``mod`` itself when the pass does not apply or nothing changed,
            otherwise a copy (module attributes kept) with the changed functions.
        """
        if not self.applies_to(ctx):
            return mod
        updates = {}
        for global_var, func in mod.functions.items():
            if isinstance(func, tirx.PrimFunc):
                result = self.transform_function(func, str(global_var.name_hint), ctx)
                if not result.same_as(func):
                    updates[global_var] = result
        return replace_functions(mod, updates)

    def transform_function(
        self, func: tirx.PrimFunc, function_name: str, ctx: PassContext
    ) -> tirx.PrimFunc:
        """Return ``func`` transformed (``func`` itself when unchanged).

        The default rewrites the body with `transform_body`.

        Args:
            func: one PrimFunc of the module.
            function_name: its global name (for error messages, see `where`).
            ctx: the compilation context.
        """
        body = self.transform_body(func.body, function_name, ctx)
        return func if body.same_as(func.body) else func.with_body(body)

    def transform_body(self, body: tirx.Stmt, function_name: str, ctx: PassContext) -> tirx.Stmt:
        """Return ``body`` rewritten (``body`` itself when unchanged).

        Raises:
            NotImplementedError: when the subclass overrides neither this nor
                `transform_function`.
        """
        raise NotImplementedError(
            f"pass class {type(self).__qualname__} must override transform_body or "
            "transform_function"
        )

    def where(self, function_name: str) -> str:
        """Return ``"<pass-name> (<function_name>)"``, the prefix of this pass's errors."""
        return f"{self.name} ({function_name})"


def replace_functions(mod: tvm.IRModule, updates: Mapping[Any, Any]) -> tvm.IRModule:
    """Return a copy of ``mod`` (attributes kept) with ``updates`` (GlobalVar -> function) applied."""
    if not updates:
        return mod
    functions = dict(mod.functions.items())
    functions.update(updates)
    return tvm.IRModule(functions, attrs=mod.attrs)
