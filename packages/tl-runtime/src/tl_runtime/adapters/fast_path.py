"""A per-kernel fast path for exact numpy arguments, generated once at load time.

The generated function accepts only the common case (exact ``numpy.ndarray`` arguments
of the declared dtype and shape, C-contiguous, aligned to the parameter's declared
``alignment``; Python int/float scalars in range) and hands anything else to the full checker. The data-pointer read (the
expensive part) is cached per argument position: when the caller passes the same array
object again, its tvm-ffi tensor view is reused. The cache holds references to the last
arguments, which keeps them alive and stops numpy from resizing them in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tl_runtime.checking import _INT_RANGES, ArgumentChecker
from tl_runtime.manifest import ParamSpec

_DLPACK_CPU = 1


def build_fast_path(
    checker: ArgumentChecker,
    launch: Callable[..., Any],
    slow: Callable[[tuple[Any, ...]], Any],
    allocate: Callable[[str, tuple[int, ...]], Any] | None = None,
) -> Callable[..., Any]:
    """Return ``call(*args)`` that checks the common case inline and calls ``launch(*full_args)``.

    Args:
        checker: the kernel's checker (its manifest decides the generated checks).
        launch: the native call, taking every parameter in order (tensors as tvm-ffi views).
        slow: the complete path, called with the caller's args when the fast path declines.
        allocate: ``(dtype, shape) -> array`` for ``out_idx`` outputs (numpy, aligned to
            ``checker.allocation_alignment``).

    Returns:
        The call function; without numpy, or when the kernel does not accept host (CPU)
        arrays, it only forwards to ``slow``.
    """
    np = checker._np
    # The generated checks accept numpy arrays, which live in host memory: a kernel whose
    # manifest does not accept host arrays (argument_device_types) takes the full path.
    if np is None or _DLPACK_CPU not in checker.device_types:
        return lambda *args: slow(args)
    import tvm_ffi

    params = checker.params
    namespace: dict[str, Any] = {
        "ndarray": np.ndarray,
        "from_dlpack": tvm_ffi.from_dlpack,
        "launch": launch,
        "slow": slow,
        "allocate": allocate,
        # (array, view) pairs in one slot each: a single store is atomic under the GIL, so
        # concurrent callers never pair one array with another array's view.
        "last": [(None, None)] * len(params),
    }
    lines = ["def call(*args):"]
    caller = checker.caller_params
    names = [f"a{i}" for i in caller]
    lines.append(f"    if len(args) != {len(caller)}:")
    lines.append("        return slow(args)")
    if names:
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
    bound: set[str] = set()
    for i in caller:
        spec = params[i]
        if spec.kind == "scalar":
            lines.extend(_scalar_lines(i, spec, namespace))
        else:
            lines.extend(_tensor_lines(i, spec, namespace, bound, np))
    out_names = []
    for k in sorted(checker.out_idx):
        spec = params[k]
        if spec.dtype == "bfloat16" or allocate is None:
            return lambda *args: slow(args)
        shape = ", ".join(str(d) if isinstance(d, int) else f"sym_{d}" for d in spec.shape)
        lines.append(
            f"    o{k} = allocate({spec.dtype!r}, ({shape}{',' if len(spec.shape) == 1 else ''}))"
        )
        lines.append(f"    v{k} = from_dlpack(o{k}, require_alignment={spec.alignment})")
        out_names.append(f"o{k}")
    call_args = ", ".join(
        f"v{i}" if params[i].kind == "tensor" else f"a{i}" for i in range(len(params))
    )
    lines.append(f"    launch({call_args})")
    if not out_names:
        lines.append("    return None")
    elif len(out_names) == 1:
        lines.append(f"    return {out_names[0]}")
    else:
        lines.append(f"    return ({', '.join(out_names)},)")
    source = "\n".join(lines) + "\n"
    # Generated from the validated manifest only (identifiers and ints), never from call data.
    exec(compile(source, f"<tl_runtime fast path: {checker.manifest.name}>", "exec"), namespace)
    call: Callable[..., Any] = namespace["call"]
    call.__doc__ = source
    return call


def _scalar_lines(i: int, spec: ParamSpec, namespace: dict[str, Any]) -> list[str]:
    if spec.dtype in _INT_RANGES:
        low, high = _INT_RANGES[spec.dtype]
        return [
            f"    if type(a{i}) is not int or not {low} <= a{i} <= {high}:",
            "        return slow(args)",
        ]
    if spec.dtype == "bool":
        return [f"    if type(a{i}) is not bool:", "        return slow(args)"]
    if spec.dtype in ("float32", "float64"):
        # float32 range is checked in the slow path; accept only float64-safe floats here.
        guard = (
            ""
            if spec.dtype == "float64"
            else f" or not -3.4028234663852886e38 <= a{i} <= 3.4028234663852886e38"
        )
        return [f"    if type(a{i}) is not float{guard}:", "        return slow(args)"]
    return ["    return slow(args)"]


def _tensor_lines(
    i: int, spec: ParamSpec, namespace: dict[str, Any], bound: set[str], np: Any
) -> list[str]:
    try:
        namespace[f"dt{i}"] = np.dtype(spec.dtype)
    except TypeError:
        return ["    return slow(args)"]
    out = [
        f"    if type(a{i}) is not ndarray or a{i}.dtype is not dt{i} or not a{i}.flags.c_contiguous:",
        "        return slow(args)",
    ]
    if spec.strides is not None:
        return ["    return slow(args)"]
    static = all(isinstance(d, int) for d in spec.shape)
    if static:
        out += [f"    if a{i}.shape != {tuple(spec.shape)!r}:", "        return slow(args)"]
    else:
        out += [
            f"    s{i} = a{i}.shape",
            f"    if len(s{i}) != {len(spec.shape)}:",
            "        return slow(args)",
        ]
        for axis, dim in enumerate(spec.shape):
            if isinstance(dim, int):
                out += [f"    if s{i}[{axis}] != {dim}:", "        return slow(args)"]
            elif dim in bound:
                out += [f"    if s{i}[{axis}] != sym_{dim}:", "        return slow(args)"]
            else:
                out.append(f"    sym_{dim} = s{i}[{axis}]")
                bound.add(dim)
    out += [
        f"    c{i} = last[{i}]",
        f"    if a{i} is c{i}[0]:",
        f"        v{i} = c{i}[1]",
        "    else:",
        # Zero-size arrays carry zero strides in numpy: the full path re-views them.
        f"        if not a{i}.size:",
        "            return slow(args)",
        "        try:",
        # A pointer below the param's declared alignment raises here: the full path
        # copies such an input, or refuses it for a written (output/inout) param.
        f"            v{i} = from_dlpack(a{i}, require_alignment={spec.alignment})",
        "        except Exception:",  # also read-only arrays: the full path copies them
        "            return slow(args)",
        f"        last[{i}] = (a{i}, v{i})",
    ]
    return out
