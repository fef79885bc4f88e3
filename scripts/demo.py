"""The demo's main job: list the registered backends."""

from __future__ import annotations


def main() -> int:
    print("tl demo: no backend is registered yet")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
