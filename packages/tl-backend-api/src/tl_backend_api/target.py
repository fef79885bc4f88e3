"""Target normalization: strings (with options), dicts, `tvm.target.Target` and ``"auto"``.

TVM 0.27 refuses option strings such as ``"cuda -arch=sm_90"``; users may
still write them, so this module turns them into the dict form TVM
accepts, converting each option by the type TVM declares for it.
"""

from __future__ import annotations

import glob
import json
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs
import tvm
from tvm.target import Target, TargetKind

from tl_backend_api.errors import TargetError

#: What users may pass wherever a target is expected.
TargetLike: TypeAlias = Target | str | Mapping[str, Any]

#: Target kinds served by the CPU backend; `is_cpu_target` is true for both.
CPU_TARGET_KINDS: frozenset[str] = frozenset({"c", "llvm"})

#: Names users may write that TVM spells differently (TVM has no ``hip`` kind).
TARGET_KIND_ALIASES: Mapping[str, str] = {"hip": "rocm"}

#: The kind ``"auto"`` picks when no GPU is visible. ``c`` because it needs
#: only a C compiler to build and run (ARCHITECTURE.md: "a kernel runs on the
#: CPU of any machine with a C compiler"), and its output can carry OpenMP
#: pragmas; ``llvm`` stays one string away.
AUTO_CPU_TARGET_KIND = "c"

#: The host target given to device targets that name none.
DEFAULT_DEVICE_HOST_KIND = "llvm"


def _cuda_visible() -> bool:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return False
    try:
        if bool(tvm.runtime.cuda(0).exist):
            return True
    except Exception:  # a TVM built without CUDA may raise instead of saying no
        pass
    # The wheel may lack the CUDA runtime while a device is present.
    return bool(glob.glob("/dev/nvidia[0-9]*"))


def _rocm_visible() -> bool:
    try:
        if bool(tvm.runtime.rocm(0).exist):
            return True
    except Exception:
        pass
    return os.path.exists("/dev/kfd") and bool(glob.glob("/dev/dri/renderD*"))


def _metal_visible() -> bool:
    if sys.platform != "darwin":
        return False
    try:
        return bool(tvm.runtime.metal(0).exist)
    except Exception:
        return False


@attrs.frozen
class DeviceProbe:
    """The cheap device checks behind ``"auto"`` (none of them imports torch).

    Each field is a zero-argument callable answering whether such a device is
    visible to this process. Tests pass their own to simulate machines.
    """

    cuda: Callable[[], bool] = _cuda_visible
    rocm: Callable[[], bool] = _rocm_visible
    metal: Callable[[], bool] = _metal_visible


def detect_auto_target_kind(probe: DeviceProbe | None = None) -> str:
    """Return the target kind ``"auto"`` stands for on this machine.

    CUDA if a CUDA device is visible, else ROCm, else Metal, else
    `AUTO_CPU_TARGET_KIND` (the CPU backend).
    """
    probe = probe if probe is not None else DeviceProbe()
    if probe.cuda():
        return "cuda"
    if probe.rocm():
        return "rocm"
    if probe.metal():
        return "metal"
    return AUTO_CPU_TARGET_KIND


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
        raise TargetError("target: expected a target kind such as 'c' or 'cuda', got ''")
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
    kind = TARGET_KIND_ALIASES.get(tokens[0], tokens[0])
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


def normalize_target(
    target: TargetLike,
    host: TargetLike | None = None,
    *,
    device_probe: DeviceProbe | None = None,
) -> Target:
    """Turn any accepted target form into a `tvm.target.Target`.

    Args:
        target: a `Target`; a string (``"c"``, ``"llvm"``, ``"cuda -arch=sm_90"``,
            ``"hip"``, a TVM tag, JSON text); a dict (``{"kind": "cuda", ...}``);
            or ``"auto"`` (see `detect_auto_target_kind`).
        host: an optional host target in any of the same forms; attached as
            the result's ``host``.
        device_probe: the device checks ``"auto"`` uses (tests pass their own).

    Returns:
        the normalized Target (with ``host`` attached when one was given).

    Raises:
        TargetError: the value is of another type, or TVM refuses it.
    """
    if isinstance(target, Target):
        normalized = target
    elif isinstance(target, str):
        stripped = target.strip()
        if stripped == "auto":
            normalized = _construct({"kind": detect_auto_target_kind(device_probe)}, target)
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
        config["kind"] = TARGET_KIND_ALIASES.get(kind, kind)
        normalized = _construct(config, target)
    else:
        raise TargetError(
            "target: expected a tvm.target.Target, a string such as 'c' or "
            f"'cuda -arch=sm_90', a dict, or 'auto'; got {type(target).__name__} {target!r}"
        )
    if host is not None:
        host_target = normalize_target(host, device_probe=device_probe)
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


def is_cpu_target(target: TargetLike) -> bool:
    """True when ``target`` is a CPU target: kind ``c`` or ``llvm``.

    Raises:
        TargetError: as `normalize_target`.
    """
    return target_kind(target) in CPU_TARGET_KINDS


def default_host_for(target: Target) -> Target:
    """The host target a context uses when the caller names none.

    The target's own ``host`` if it has one; a CPU target hosts itself;
    every device target gets `DEFAULT_DEVICE_HOST_KIND`.
    """
    if target.host is not None:
        return target.host
    if str(target.kind.name) in CPU_TARGET_KINDS:
        return target
    return Target({"kind": DEFAULT_DEVICE_HOST_KIND})


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
