"""tl-passes test setup: make the helper module importable under pytest's importlib mode."""

from __future__ import annotations

import sys
from pathlib import Path

# importlib mode puts no test directory on sys.path; the helper has a unique name.
sys.path.insert(0, str(Path(__file__).parent))
