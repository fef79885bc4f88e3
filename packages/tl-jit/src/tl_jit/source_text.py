"""The source text of a kernel builder, read once per process.

Both deciding whether a function is eager-style and computing its front-end cache key
read the builder's source; ``inspect.getsource`` tokenizes the whole module, so the
read is shared (it is on the cache-hit path of every fresh process).
"""

from __future__ import annotations

import functools
import inspect
import textwrap
import types


@functools.lru_cache(maxsize=1024)
def dedented_source(code: types.CodeType) -> str | None:
    """The dedented source of the function whose code object is ``code``.

    Returns:
        The text, or None when it is unavailable (``exec``, the REPL, a deleted file).
    """
    try:
        return textwrap.dedent(inspect.getsource(code))
    except (OSError, TypeError):
        return None
