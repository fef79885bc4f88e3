"""The front-end key covers every name a kernel's construction reads: builder arguments,
closures, defaults, the module globals its code or source names (annotations included,
also under PEP 563) and attributes of the user's own modules; a value with no stable
rendering makes the call unkeyable (the kernel is then found by its IR key)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tl_jit.keys import Unkeyable, frontend_key


def _load(path: Path, name: str, source: str) -> types.ModuleType:
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _key(module: types.ModuleType, name: str, **arguments: Any) -> str:
    return frontend_key(getattr(module, name), arguments, {"target": "c"})


# The builder reads the global `N` only in a nested function's parameter annotation:
# in the bytecode that `N` is the builder's argument, but a kernel parser reading the
# source may resolve it elsewhere, so the key must cover the global too.
ANNOTATION_BUILDER = """
N = 16

def copy_kernel(N):
    def main(X: ("tensor", (N,)), Y: ("tensor", (N,))):
        return None
    return main
"""

PEP563_BUILDER = """
from __future__ import annotations

LENGTH = 16

def copy_kernel(n):
    def main(X: T.Tensor((LENGTH,), "float32")):
        return None
    return main
"""


def test_a_global_named_like_a_builder_argument_stays_out_of_the_key(tmp_path: Path) -> None:
    # The annotation's N is the builder's argument (the parser resolves it there), so
    # the module global N is not read: hashing it made an unrelated global (a float8
    # tensor, a 256 MiB array named like a parameter) part of every key.
    module = _load(tmp_path / "fk_annotation.py", "fk_annotation", ANNOTATION_BUILDER)
    first = _key(module, "copy_kernel", N=64)
    assert _key(module, "copy_kernel", N=64) == first
    module.N = 32
    assert _key(module, "copy_kernel", N=64) == first
    del module.N
    assert _key(module, "copy_kernel", N=64) == first
    assert _key(module, "copy_kernel", N=32) != first


def test_a_global_named_only_in_a_pep563_annotation_changes_the_key(tmp_path: Path) -> None:
    module = _load(tmp_path / "fk_pep563.py", "fk_pep563", PEP563_BUILDER)
    first = _key(module, "copy_kernel", n=1)
    module.LENGTH = 32
    assert _key(module, "copy_kernel", n=1) != first


def test_constants_read_from_a_user_module_change_the_key(tmp_path: Path) -> None:
    config = _load(tmp_path / "fk_config.py", "fk_config", "BLOCK = 32\n")
    module = _load(
        tmp_path / "fk_user.py",
        "fk_user",
        """
        import fk_config

        def build(n):
            return n * fk_config.BLOCK
        """,
    )
    first = _key(module, "build", n=4)
    config.BLOCK = 64
    assert _key(module, "build", n=4) != first


def test_a_global_without_stable_rendering_makes_the_call_unkeyable(tmp_path: Path) -> None:
    module = _load(
        tmp_path / "fk_opaque.py",
        "fk_opaque",
        """
        import threading

        class Settings:
            block = 32

            def __init__(self):
                self.lock = threading.Lock()  # an address in its repr, nothing else

        SETTINGS = Settings()

        def build(n):
            return n * SETTINGS.block
        """,
    )
    with pytest.raises(Unkeyable):
        _key(module, "build", n=4)


def test_a_wrapped_global_is_keyed_by_the_function_it_wraps(tmp_path: Path) -> None:
    module = _load(
        tmp_path / "fk_wrapped.py",
        "fk_wrapped",
        """
        import functools

        SCALE = 2

        def helper(n):
            return n * SCALE

        class Wrapper:
            def __init__(self, func):
                functools.update_wrapper(self, func)

        wrapped = Wrapper(helper)

        def build(n):
            return wrapped(n)
        """,
    )
    first = _key(module, "build", n=4)
    module.SCALE = 3
    assert _key(module, "build", n=4) != first


def test_compiler_objects_and_library_functions_stay_keyable() -> None:
    import numpy as np

    import tl_jit.language as T

    float32 = T.float32

    def build(n: int) -> Any:
        return np.prod((n, T.ceildiv(n, 2))), float32

    assert len(frontend_key(build, {"n": 1}, {})) == 64  # type: ignore[arg-type]


SCOPED_BUILDER = """
import numpy as np

A = np.zeros(4)
SCALE = 2


def builder(n):
    width = n * SCALE

    def main(A: ("tensor", (width,)), B: ("tensor", (width,))):
        return [A for A in range(3)], (lambda B: B)(1), B

    return main
"""


def test_names_bound_in_the_source_are_not_global_reads(tmp_path: Path) -> None:
    # A parameter, a comprehension target or a lambda argument named like a module
    # global is not a read of that global; a global the source does read still is.
    module = _load(tmp_path / "fk_scoped.py", "fk_scoped", SCOPED_BUILDER)
    first = _key(module, "builder", n=4)
    module.A = np.ones(4)
    assert _key(module, "builder", n=4) == first
    module.SCALE = 3
    assert _key(module, "builder", n=4) != first


def test_a_module_global_float8_tensor_is_keyed_by_its_bytes() -> None:
    torch = pytest.importorskip("torch")
    from tl_jit.canonical import canonical_value

    values = torch.tensor([1.0, 2.0, -3.0]).to(torch.float8_e4m3fn)
    assert canonical_value(values) == canonical_value(values.clone())
    assert canonical_value(values) != canonical_value(
        torch.tensor([1.0, 2.0, 3.0]).to(torch.float8_e4m3fn)
    )
