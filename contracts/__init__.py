"""Contract modules checked by mypy --strict and conformance tests run by pytest."""
