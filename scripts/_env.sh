# Sourced by scripts/demo and scripts/test: makes sure .venv/ exists at the
# repository root and holds every workspace package (editable) plus the
# dev tools. The test plugins (integration_tests/plugins) are not installed:
# the tests that need them put them on the path themselves, so the demo and
# `tl backends` show the real backends only. Idempotent: reinstalls only
# when a pyproject.toml or the dev requirements changed since the last
# successful install.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"

_workspace_fingerprint() {
    # Every file that decides what gets installed.
    (cd "$ROOT" && cat requirements-dev.txt packages/*/pyproject.toml 2>/dev/null; \
        "$PY" --version) \
        | sha256sum | cut -d' ' -f1
}

ensure_venv() {
    local stamp="$VENV/.tl-installed" want
    want="$(_workspace_fingerprint)"
    if [[ -x "$VENV/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    if [[ ! -x "$VENV/bin/python" ]]; then
        echo "[setup] creating $VENV" >&2
        "$PY" -m venv "$VENV"
    fi
    echo "[setup] installing workspace packages (editable) and dev tools" >&2
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
    local args=(-r "$ROOT/requirements-dev.txt")
    local pkg
    for pkg in "$ROOT"/packages/*/; do
        [[ -f "$pkg/pyproject.toml" ]] && args+=(-e "$pkg")
    done
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${args[@]}"
    # Older setups installed the test plugins into the venv; they belong to the tests only.
    "$VENV/bin/python" -m pip uninstall -q -y tl-backend-dummy tl-backend-broken >/dev/null 2>&1 || true
    echo "$want" > "$stamp"
}

ensure_venv
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
