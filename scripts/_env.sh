# Sourced by the scripts: makes sure .venv/ exists at the repository root and
# holds every workspace package (editable) plus what the calling script needs:
# TL_ENV_PROFILE=demo (scripts/demo: requirements-demo.txt, no test tools, no
# torch) or dev (the default: requirements-dev.txt, which includes the demo's).
# The test plugins (integration_tests/plugins) are not installed: the tests that
# need them put them on the path themselves, so the demo and `tl backends` show
# the real backends only. Idempotent: reinstalls only when a pyproject.toml or a
# requirements file changed since the last successful install, or when the
# script needs more than the venv holds (a demo venv, then ./scripts/test).
# Prints each step, and pip's downloads and installs as they happen; the full
# pip log is kept in .venv/.tl-install.log.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
PROFILE="${TL_ENV_PROFILE:-dev}"

_workspace_fingerprint() {
    # Every file that decides what gets installed.
    (cd "$ROOT" && cat requirements-demo.txt requirements-dev.txt packages/*/pyproject.toml \
        2>/dev/null; "$PY" --version) \
        | sha256sum | cut -d' ' -f1
}

_pip_install() {
    # pip with its progress lines shown (Collecting/Downloading/Installing...), the
    # full log kept; on failure the log's tail says why.
    local log="$VENV/.tl-install.log" status=0
    "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off "$@" \
        >>"$log" 2>&1 &
    local pid=$! shown=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 2
        local now
        now="$(grep -cE '^(Collecting|Downloading|Installing|Building)' "$log" || true)"
        if [[ "$now" != "$shown" ]]; then
            grep -E '^(Collecting|Downloading|Installing|Building)' "$log" \
                | sed -n "$((shown + 1)),\$p" | sed 's/^/[setup]   /' >&2
            shown="$now"
        fi
    done
    wait "$pid" || status=$?
    if [[ $status -ne 0 ]]; then
        echo "[setup] pip failed (exit $status); the end of $log:" >&2
        tail -n 30 "$log" >&2
        return "$status"
    fi
}

ensure_venv() {
    local stamp="$VENV/.tl-installed" want have="" have_profile=""
    want="$(_workspace_fingerprint)"
    if [[ -f "$stamp" ]]; then
        read -r have have_profile < "$stamp" || true
        have_profile="${have_profile:-dev}"  # stamps written before profiles were dev
    fi
    if [[ -x "$VENV/bin/python" && "$have" == "$want" ]] \
        && [[ "$have_profile" == dev || "$PROFILE" == demo ]]; then
        return 0
    fi
    if [[ ! -x "$VENV/bin/python" ]]; then
        echo "[setup] creating $VENV (python: $("$PY" --version 2>&1))" >&2
        "$PY" -m venv "$VENV"
    fi
    : > "$VENV/.tl-install.log"
    echo "[setup] 1/3 upgrading pip" >&2
    _pip_install -q --upgrade pip
    local requirements="$ROOT/requirements-dev.txt" what="the dev tools (ruff, mypy, pytest, torch...)"
    if [[ "$PROFILE" == demo ]]; then
        requirements="$ROOT/requirements-demo.txt"
        what="what the demo needs (numpy, cython)"
    fi
    echo "[setup] 2/3 installing the workspace packages (editable), apache-tvm and $what;" \
        "the first time this downloads a few hundred MB" >&2
    local args=(-r "$requirements")
    local pkg
    for pkg in "$ROOT"/packages/*/; do
        [[ -f "$pkg/pyproject.toml" ]] && args+=(-e "$pkg")
    done
    _pip_install "${args[@]}"
    echo "[setup] 3/3 finishing" >&2
    # Older setups installed the test plugins into the venv; they belong to the tests only.
    "$VENV/bin/python" -m pip uninstall -q -y tl-backend-dummy tl-backend-broken >/dev/null 2>&1 || true
    echo "$want $PROFILE" > "$stamp"
    echo "[setup] done: $VENV ($PROFILE)" >&2
}

ensure_venv
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
