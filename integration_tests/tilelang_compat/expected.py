"""Failures the corpus expects today (written by survey.py; do not edit by hand)."""

from __future__ import annotations

EXPECTED_FAILURES: dict[tuple[str, str], tuple[type[BaseException], str]] = {}
