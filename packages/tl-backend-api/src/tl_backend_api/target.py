"""Target syntax: strings (with options), dicts and `tvm.target.Target`, made TVM targets.

TVM 0.27 refuses option strings such as ``"cuda -arch=sm_90"``; users may
still write them, so this module turns them into the dict form TVM
accepts, converting each option by the type TVM declares for it. It is pure
syntax: it never asks the registry. A backend's kind alias (``"hip"``) and
``"auto"`` are resolved above the registry, by `tl_backend_api.kinds.resolve_target`,
which rewrites them to a TVM kind and then calls `normalize_target`; nothing
here names a target kind.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from tvm.target import Target, TargetKind

from tl_backend_api.errors import TargetError

#: What users may pass wherever a target is expected.
TargetLike: TypeAlias = Target | str | Mapping[str, Any]


def tvm_target_kinds() -> frozenset[str]:
    """The target kind names TVM knows (``Target.list_kinds()``)."""
    return frozenset(str(kind) for kind in Target.list_kinds())


def _convert_option(kind: str, key: str, raw: str, option_types: Mapping[str, str]) -> Any:
    declared = option_types.get(key)
    if declared is None:
        return raw  # TVM reports unknown options itself, with the kind's valid names
    if declared == "int":
        try:
            return int(raw, 0)
        except ValueError:
            raise TargetError(
                f"target option -{key} of kind {kind!r}: expected an integer, got {raw!r}"
            ) from None
    if declared == "bool":
        lowered = raw.lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise TargetError(
            f"target option -{key} of kind {kind!r}: expected true/false, got {raw!r}"
        )
    if declared.startswith("Array"):
        return [item for item in raw.split(",") if item]
    return raw


def parse_target_string(text: str) -> dict[str, Any]:
    """Parse a target string into TVM's dict form.

    ``"cuda -arch=sm_90 -max_num_threads=512"`` becomes
    ``{"kind": "cuda", "arch": "sm_90", "max_num_threads": 512}``: each
    option is converted to the type TVM declares for it (int, bool,
    comma-separated list). A string starting with ``{`` is read as JSON.
    A bare flag (``-fast-math``) means true.

    Raises:
        TargetError: empty text, malformed JSON, an option not of the form
            ``-key=value`` / ``-flag``, or a value of the wrong type.
    """
    stripped = text.strip()
    if not stripped:
        raise TargetError(
            "target: expected a target kind (a TVM kind, an alias a backend declares, "
            "or 'auto'), got ''"
        )
    if stripped.startswith("{"):
        try:
            loaded = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise TargetError(f"target: expected valid JSON, got {text!r} ({exc})") from None
        if not isinstance(loaded, dict):
            raise TargetError(f"target: expected a JSON object, got {text!r}")
        return dict(loaded)
    try:
        tokens = shlex.split(stripped)
    except ValueError as exc:
        raise TargetError(f"target: cannot split {text!r} into options ({exc})") from None
    kind = tokens[0]
    config: dict[str, Any] = {"kind": kind}
    try:
        option_types: Mapping[str, str] = TargetKind.options_from_name(kind)
    except Exception:
        option_types = {}
    for token in tokens[1:]:
        if not token.startswith("-") or token.strip("-") == "":
            raise TargetError(
                f"target {text!r}: expected options of the form -key=value or -flag, got {token!r}"
            )
        body = token.lstrip("-")
        key, has_value, raw = body.partition("=")
        config[key] = _convert_option(kind, key, raw, option_types) if has_value else True
    return config


def _construct(config: Any, shown: object) -> Target:
    try:
        return Target(config)
    except Exception as exc:  # TVM raises ValueError / TVMError with its own reason
        raise TargetError(f"target {shown!r} was refused by TVM: {exc}") from None


def normalize_target(target: TargetLike, host: TargetLike | None = None) -> Target:
    """Turn a target written in TVM's terms into a `tvm.target.Target` (syntax only).

    Args:
        target: a `Target`; a string (a TVM kind with ``-key=value`` options, a
            TVM tag, JSON text); or a dict (``{"kind": ..., ...}``). Kind aliases
            and ``"auto"`` are the registry's business: `tl_backend_api.kinds.resolve_target`
            resolves them first.
        host: an optional host target in any of the same forms; attached as
            the result's ``host``.

    Returns:
        the normalized Target (with ``host`` attached when one was given).

    Raises:
        TargetError: the value is of another type, ``"auto"``, or TVM refuses it
            (a kind TVM does not know included).
    """
    if isinstance(target, Target):
        normalized = target
    elif isinstance(target, str):
        stripped = target.strip()
        if stripped == "auto":
            raise TargetError(
                "target 'auto': expected a TVM kind here; 'auto' is resolved from the "
                "installed backends by tl_backend_api.resolve_target (create_backend_context "
                "and resolve_backend call it)"
            )
        if "/" in stripped and " " not in stripped and not stripped.startswith("{"):
            normalized = _construct(stripped, target)  # a TVM tag, e.g. nvidia/nvidia-a100
        else:
            normalized = _construct(parse_target_string(stripped), target)
    elif isinstance(target, Mapping):
        config = dict(target)
        kind = config.get("kind")
        if not isinstance(kind, str) or not kind:
            raise TargetError(
                f"target: expected a dict with a non-empty string 'kind', got {target!r}"
            )
        normalized = _construct(config, target)
    else:
        raise TargetError(
            "target: expected a tvm.target.Target, a string (a kind with -key=value options, "
            "a TVM tag or JSON), a dict with a 'kind', or 'auto'; "
            f"got {type(target).__name__} {target!r}"
        )
    if host is not None:
        host_target = normalize_target(host)
        try:
            normalized = Target(normalized, host=host_target)
        except Exception as exc:
            raise TargetError(f"target host {host!r} was refused by TVM: {exc}") from None
    return normalized


def target_key(target: Target) -> str:
    """A stable text form of a target (JSON, sorted), for messages and cache keys."""
    return json.dumps(_jsonable(target.export()), sort_keys=True)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Sequence) or hasattr(value, "__iter__"):
        return [_jsonable(v) for v in value]
    return str(value)


def describe_target(target: Target) -> str:
    """A short description for messages: the kind and the options set on it, no host."""
    exported = _jsonable(target.export())
    kind = exported.pop("kind", "?")
    defaults = _jsonable(Target({"kind": kind}).export()) if kind != "?" else {}
    for key in ("host", "tag", "keys"):
        exported.pop(key, None)
    changed = {k: v for k, v in exported.items() if defaults.get(k) != v}
    if not changed:
        return f"{kind!r}"
    options = " ".join(f"-{k}={v}" for k, v in sorted(changed.items()))
    return f"'{kind} {options}'"
