"""What a function's code reads and holds, as the front-end key renders it: its
constants as text the same in every process, and the global names it loads."""

from __future__ import annotations

import dis
import functools
import types
from typing import Any


def _constant_text(constant: object) -> str:
    """A code object's constant as text the same in every process: a frozenset (what
    ``x in {"a", "b"}`` compiles to) in sorted order, since its repr follows the hash
    seed."""
    if isinstance(constant, frozenset):
        return "frozenset(" + repr(sorted(_constant_text(c) for c in constant)) + ")"
    if isinstance(constant, tuple) and _holds_a_frozenset(constant):
        return "(" + ", ".join(_constant_text(c) for c in constant) + ",)"
    return repr(constant)  # every other constant's repr is the same in every process


def _holds_a_frozenset(constant: tuple[Any, ...]) -> bool:
    return any(
        isinstance(c, frozenset) or (isinstance(c, tuple) and _holds_a_frozenset(c))
        for c in constant
    )


def code_digest(code: types.CodeType) -> list[Any]:
    """A code object as the front-end key renders it: its name, bytecode, constants
    (nested code objects the same way), and the names it uses."""
    consts = [
        code_digest(c) if isinstance(c, types.CodeType) else _constant_text(c)
        for c in code.co_consts
    ]
    return [
        code.co_qualname if hasattr(code, "co_qualname") else code.co_name,
        code.co_code.hex(),
        consts,
        list(code.co_names),
        list(code.co_varnames),
        list(code.co_freevars),
        list(code.co_cellvars),
    ]


#: Instructions that read a global (or builtin) by name.
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})


@functools.lru_cache(maxsize=1024)  # equal code objects load the same names
def global_loads(code: types.CodeType) -> frozenset[str]:
    """The names ``code`` (nested code included) loads as globals (or builtins).

    Not ``co_names``, which also holds the attribute names it reads: ``T.gemm(...)``
    does not read the module's global ``gemm``, and redefining that global must not
    change the digest of a kernel that calls ``T.gemm``.
    """
    loads: set[str] = set()
    pending = [code]
    while pending:
        current = pending.pop()
        for instruction in dis.get_instructions(current):
            if instruction.opname in _GLOBAL_LOADS:
                loads.add(str(instruction.argval))
        pending.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return frozenset(loads)
