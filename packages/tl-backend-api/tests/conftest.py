"""Fixtures for tl-backend-api's unit tests: an isolated registry and a small module."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tvm

from tl_backend_api.descriptors import clear_availability_cache
from tl_backend_api.registry import isolated_registry

# importlib mode puts no test directory on sys.path; the testkit has a unique name.
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """An empty registry that sees no installed entry points."""
    clear_availability_cache()
    with isolated_registry(discover=False):
        yield
    clear_availability_cache()


@pytest.fixture
def small_module() -> Any:
    """A one-function IRModule (built without TVMScript so no source file is needed)."""
    n = tvm.tirx.Var("n", "int32")
    body = tvm.tirx.Evaluate(tvm.tirx.const(0, "int32"))
    func = tvm.tirx.PrimFunc([n], body).with_attr("global_symbol", "k")
    return tvm.IRModule({"k": func})
