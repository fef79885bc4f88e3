"""TileLang's own kernels, each file copied from one TileLang test or example file with
only its imports changed (``import tl_jit as tilelang``, ``import tl_jit.language as T``).

These files are not formatted or linted as this project's code: they stay as their
authors wrote them, so a kernel that works here works unchanged in TileLang and back.
"""
