"""The `Pass` base class and the context every pass run receives."""

from __future__ import annotations

import abc
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import tvm

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


def replace_functions(mod: tvm.IRModule, updates: Mapping[Any, Any]) -> tvm.IRModule:
    """Return a copy of ``mod`` (attributes kept) with ``updates`` (GlobalVar -> function) applied."""
    if not updates:
        return mod
    functions = dict(mod.functions.items())
    functions.update(updates)
    return tvm.IRModule(functions, attrs=mod.attrs)
