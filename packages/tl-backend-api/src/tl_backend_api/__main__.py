"""``python -m tl_backend_api``: print the installed backends and plugin failures."""

from __future__ import annotations

from tl_backend_api.report import format_backend_report


def main() -> int:
    """Print the report; exit status 0."""
    print(format_backend_report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
