"""The source text of a kernel builder, read once per code object (`per_code_object`).

Both deciding whether a function is eager-style and computing its front-end cache key
read the builder's source, so the read is shared (it is on the cache-hit path of every
fresh process). It is read the way ``inspect.getsource`` reads a code object's source,
without ``inspect.getmodule``: that walks every module in ``sys.modules`` on its first
use (about 75 ms in a process that has imported torch).
"""

from __future__ import annotations

import functools
import inspect
import linecache
import re
import textwrap
import types
import weakref
from collections.abc import Callable
from typing import TypeVar

# What inspect.findsource looks for when it walks back from a code object's first line.
_DEFINITION_START = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


_Result = TypeVar("_Result")


def per_code_object(
    read: Callable[[types.CodeType], _Result],
) -> Callable[[types.CodeType], _Result]:
    """Cache ``read(code)`` per code object, by identity.

    Not by equality (as ``functools.lru_cache`` would): code objects compare equal
    without their file name, and without what the bytecode leaves out, such as a local
    variable's annotation (an eager kernel's ``A: T.Tensor[[N], T.float32]``). So the
    same function in two files, or a function re-executed after such an edit (a reloaded
    module, a notebook cell run again), would be handed the first one's source. An entry
    leaves the cache with its code object.
    """
    cache: dict[int, tuple[weakref.ref[types.CodeType], _Result]] = {}

    def cached(code: types.CodeType) -> _Result:
        key = id(code)
        held = cache.get(key)
        if held is not None and held[0]() is code:
            return held[1]
        result = read(code)

        def forget(_: object, key: int = key) -> None:
            cache.pop(key, None)

        cache[key] = (weakref.ref(code, forget), result)
        return result

    functools.update_wrapper(cached, read)
    return cached


@per_code_object
def dedented_source(code: types.CodeType) -> str | None:
    """The dedented source of the function whose code object is ``code``.

    Lines come from ``linecache`` (which also holds sources registered by notebooks),
    refreshed first when the file changed on disk, like ``inspect.getsource``.

    Returns:
        The text, or None when it is unavailable (``exec``, the REPL, a deleted file).
    """
    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.getlines(filename)
    start = code.co_firstlineno - 1
    if not lines or not 0 <= start < len(lines):
        return None
    while start > 0 and not _DEFINITION_START.match(lines[start]):
        start -= 1
    try:
        block = inspect.getblock(lines[start:])
    except (IndentationError, SyntaxError):
        return None
    return textwrap.dedent("".join(block))
