"""Target normalization: strings (with options), dicts, `tvm.target.Target` and ``"auto"``.

TVM 0.27 refuses option strings such as ``"cuda -arch=sm_90"``; users may
still write them, so this module turns them into the dict form TVM
accepts, converting each option by the type TVM declares for it. A kind
name TVM does not know is looked up in the backends' declared aliases, and
``"auto"`` is answered by the backends' device probes (`tl_backend_api.kinds`):
nothing here names a target kind.
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


def _kind_meant(name: str) -> str:
    """TVM's kind ``name``, or the kind a backend declares ``name`` an alias of."""
    if name in tvm_target_kinds():
        return name
    # Backends declare their aliases; the registry sits above this module.
    from tl_backend_api.kinds import canonical_kind

    return canonical_kind(name)


def tvm_target_kinds() -> frozenset[str]:
    """The target kind names TVM knows (``Target.list_kinds()``)."""
    return frozenset(str(kind) for kind in Target.list_kinds())


def _auto_kind() -> str:
    # The registry sits above this module; "auto" asks the backends it holds.
    from tl_backend_api.kinds import detect_auto_target_kind

    return detect_auto_target_kind()


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
    kind = _kind_meant(tokens[0])
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
    """Turn any accepted target form into a `tvm.target.Target`.

    Args:
        target: a `Target`; a string (a TVM kind with ``-key=value`` options, a
            kind alias a backend declares, a TVM tag, JSON text); a dict
            (``{"kind": ..., ...}``); or ``"auto"`` (see
            `tl_backend_api.kinds.detect_auto_target_kind`).
        host: an optional host target in any of the same forms; attached as
            the result's ``host``.

    Returns:
        the normalized Target (with ``host`` attached when one was given).

    Raises:
        TargetError: the value is of another type, or TVM refuses it.
        BackendNotFoundError: ``"auto"`` found no backend whose device is present.
    """
    if isinstance(target, Target):
        normalized = target
    elif isinstance(target, str):
        stripped = target.strip()
        if stripped == "auto":
            normalized = _construct({"kind": _auto_kind()}, target)
        elif "/" in stripped and " " not in stripped and not stripped.startswith("{"):
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
        config["kind"] = _kind_meant(kind)
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


def target_kind(target: TargetLike) -> str:
    """Return the TVM kind name of ``target`` (normalizing it first).

    Raises:
        TargetError: as `normalize_target`.
    """
    return str(normalize_target(target).kind.name)


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
