"""The contract tests: this backend conforms to tl_backend_api's contract."""

from __future__ import annotations

from tl_backend_api import assert_conforms

# Sorted for the monorepo's ruff config, where tl_codegen_* counts as third-party.
from tl_codegen_cuda.backend import BACKEND


def test_backend_conforms() -> None:
    assert_conforms(BACKEND)


def test_static_contract_module_imports() -> None:
    from tl_codegen_cuda.contract import check_types

    check_types()


def test_the_language_module_re_exports_the_gpu_language_list() -> None:
    from tl_codegen_cuda import language
    from tl_ir.language import gpu

    assert language.__all__ == gpu.__all__
    for name in gpu.__all__:
        assert getattr(language, name) is getattr(gpu, name), name
