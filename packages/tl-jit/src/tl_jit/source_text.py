"""The source text of a kernel builder, read once per process.

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

# What inspect.findsource looks for when it walks back from a code object's first line.
_DEFINITION_START = re.compile(r"^(\s*def\s)|(\s*async\s+def\s)|(.*(?<!\w)lambda(:|\s))|^(\s*@)")


@functools.lru_cache(maxsize=1024)
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
