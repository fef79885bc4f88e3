"""The demo's main job: list the registered backends.

Until the compiler lands this prints every backend found through the
``tl.backends`` entry points, with its target kinds, its execution backends
in ``"auto"`` order (adapter, availability) and any plugin that failed to load.
"""

from __future__ import annotations


def main() -> int:
    """Print the backend report; exit status 0 (a broken plugin is reported, not fatal)."""
    from tl_backend_api import AUTO_CPU_TARGET_KIND, detect_auto_target_kind, format_backend_report

    print("tl demo: installed backends")
    print()
    print(format_backend_report())
    print()
    kind = detect_auto_target_kind()
    print(
        f'target "auto" on this machine means kind {kind!r} (CPU fallback: {AUTO_CPU_TARGET_KIND!r})'
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
