"""Tuning results kept with the disk cache (``<cache root>/autotune/<key>.json``).

A record holds what a search found (every configuration's time or failure, the
winner), where (the machine) and with what (the compiler's versions). Its key is the
autotuner's: the function's source and the values it reads, the non-tuned arguments, the
configurations and the compile options (the target among them), so any process on any
node that shares the cache root and computes the same key reuses it instead of searching
again. JSON only, never pickle; written atomically; a record found under another key is
ignored (`tl_jit.cache.KernelCache.read_record`). Each record carries a proof
(`tl_jit.record_proof`: an HMAC under the cache root's secret) over its key and its
content, so a record edited (a faster time, another winner), copied from another cache
root or written by an older tl_jit is ignored with a `CacheWarning` and the search runs
again (docs/cache.md, "Trust model").
"""

from __future__ import annotations

import json
import os
import platform
import socket
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tl_jit import record_proof
from tl_jit.cache import CacheWarning, KernelCache, default_cache

KIND = "autotune"
"""The cache directory (and record kind) of tuning results."""

PROOF_FIELD = "proof"
"""The field holding a record's proof."""

_UNSIGNED_FIELDS = (PROOF_FIELD, "key")  # the proof itself, and the key write_record adds


def _parts(key: str, body: dict[str, Any]) -> list[Any]:
    return [KIND, key, {k: v for k, v in body.items() if k not in _UNSIGNED_FIELDS}]


def machine() -> dict[str, Any]:
    """Where a search ran: host name, OS, architecture, processor and core count."""
    return {
        "host": socket.gethostname(),
        "system": platform.system(),
        "architecture": platform.machine(),
        "processor": platform.processor() or _cpu_model(),
        "cores": os.cpu_count(),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return ""


def versions() -> dict[str, str]:
    """The compiler's versions a result was found with (tl_* packages and TVM)."""
    from tl_jit.versions import installed_versions

    found = installed_versions()
    return {
        name: version
        for name, version in sorted(found.items())
        if name.startswith(("tl_", "apache_tvm"))
    }


def save(
    key: str,
    *,
    function: str,
    target: str,
    best_config: dict[str, Any],
    latency: float | None,
    results: list[dict[str, Any]],
    cache: KernelCache | None = None,
    ref_latency: float | None = None,
) -> None:
    """Store one search's result under ``key``, signed with the cache root's secret
    (failures only warn, as cache writes do; without a usable secret nothing is stored)."""
    cache = cache or default_cache()
    body = {
        "function": function,
        "target": target,
        "best_config": best_config,
        "latency": latency,
        "ref_latency": ref_latency,
        "results": results,
        "machine": machine(),
        "versions": versions(),
        "created": time.time(),
    }
    try:
        # Signed as it will read back (tuples become lists, keys strings).
        body = json.loads(json.dumps(body))
    except (TypeError, ValueError) as exc:
        warnings.warn(f"tl_jit cache: cannot write {KIND} record: {exc}", CacheWarning, 2)
        return
    secret = record_proof.secret(cache)
    if secret is None:
        return
    body[PROOF_FIELD] = record_proof.proof(secret, _parts(key, body))
    cache.write_record(KIND, key, body)


def load(key: str, cache: KernelCache | None = None) -> dict[str, Any] | None:
    """The result stored under ``key``, or None: absent, unreadable, malformed, or not
    proving it was written by this cache for this key (edited, copied from another cache
    root, or written by an older tl_jit: ignored with a `CacheWarning`)."""
    cache = cache or default_cache()
    record = cache.read_record(KIND, key)
    if record is None:
        return None
    secret = record_proof.secret(cache)
    if secret is None:
        return None
    if not record_proof.proves(secret, _parts(key, record), record.get(PROOF_FIELD)):
        warnings.warn(
            f"tl_jit cache: ignoring tuning result {key[:16]}...: it does not prove it was "
            "written by this cache for this search (edited, copied from another cache, or "
            "written by an older tl_jit); the search runs again",
            CacheWarning,
            3,
        )
        return None
    if not isinstance(record.get("best_config"), dict):
        return None
    return record


@dataclass(frozen=True)
class TuningRecord:
    """One stored result, as `list_records` reports it."""

    key: str
    function: str
    target: str
    best_config: dict[str, Any]
    latency: float | None
    configurations: int
    failures: int
    host: str
    created: float | None
    path: Path

    def format(self) -> str:
        """One line for ``tl cache tuning``."""
        latency = f"{self.latency:.4f} ms" if isinstance(self.latency, float) else "-"
        when = (
            time.strftime("%Y-%m-%d %H:%M", time.localtime(self.created))
            if self.created is not None
            else "-"
        )
        return (
            f"{self.key[:16]}  {self.function}  target={self.target}  best={self.best_config}  "
            f"{latency}  ({self.configurations} configs, {self.failures} failed)  "
            f"host={self.host}  {when}"
        )


def list_records(cache: KernelCache | None = None) -> list[TuningRecord]:
    """Every readable tuning result in the cache, oldest first."""
    from tl_jit.cache import is_cache_key

    cache = cache or default_cache()
    directory = cache.root / KIND
    if not directory.is_dir():
        return []
    found = []
    for path in sorted(directory.glob("*.json")):
        key = path.stem
        if not is_cache_key(key):
            continue
        record = load(key, cache)
        if record is None:
            continue
        results = record.get("results")
        results = results if isinstance(results, list) else []
        machine_info = record.get("machine")
        created = record.get("created")
        latency = record.get("latency")
        found.append(
            TuningRecord(
                key=key,
                function=str(record.get("function", "?")),
                target=str(record.get("target", "?")),
                best_config=record["best_config"],
                latency=float(latency) if isinstance(latency, int | float) else None,
                configurations=len(results),
                failures=sum(1 for r in results if isinstance(r, dict) and r.get("error")),
                host=str(machine_info.get("host", "?")) if isinstance(machine_info, dict) else "?",
                created=float(created) if isinstance(created, int | float) else None,
                path=path,
            )
        )
    found.sort(key=lambda r: r.created or 0.0)
    return found


def clear_records(cache: KernelCache | None = None) -> int:
    """Remove every tuning result (kernels stay); returns how many were removed."""
    cache = cache or default_cache()
    directory = cache.root / KIND
    if not directory.is_dir():
        return 0
    cache.check_root()
    removed = 0
    for path in list(directory.iterdir()):
        if path.suffix == ".json" and path.is_file() and not path.is_symlink():
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed += 1
    return removed
