"""A per-kernel fast path for exact numpy arguments, generated once at load time.

The generated function accepts only the common case (exact ``numpy.ndarray`` arguments
of the declared dtype and shape, C-contiguous or, for a parameter with declared
strides, with exactly those element strides (non-negative), aligned to the parameter's
declared ``alignment``; Python int/float scalars in range) and hands anything else to ``other``
(the adapter's path for other tensor types, e.g. torch) or the full checker. The data-pointer read (the
expensive part) is cached per argument position: when the caller passes the same array
object again, its tvm-ffi tensor view is reused. The cache holds references to the last
arguments, which keeps them alive and stops numpy from resizing them in place. Arrays
changed in place between calls are checked like new ones (dtype, shape, strides and
flags are read from the array on every call), and an entry made for a symbolic layout
holds the shape and strides its view was made for: it is reused only while they hold.
The checks are generated from the kernel's ``CallPlan`` (``tl_runtime.call_plan``), the
plan the full checker and the Cython launcher consume too.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from tl_runtime.argument_memory import strides_separate
from tl_runtime.call_plan import CallPlan, ParamPlan
from tl_runtime.checking import ArgumentChecker


def build_fast_path(
    checker: ArgumentChecker,
    launch: Callable[..., Any],
    slow: Callable[[tuple[Any, ...]], Any],
    other: Callable[[], Callable[[tuple[Any, ...]], Any]] | None = None,
) -> Callable[..., Any]:
    """Return ``call(*args)`` that checks the common case inline and calls ``launch(*full_args)``.

    Args:
        checker: the kernel's checker (its manifest decides the generated checks).
        launch: the native call, taking every parameter in order (tensors as tvm-ffi views).
        slow: the complete path, called with the caller's args when the fast path declines.
        other: makes (on the first call that needs it) the path for caller args that are
            not what the generated numpy checks accept (torch tensors...); that path runs
            its own checks or ``slow``. Default: ``slow``.

    Returns:
        The call function; without numpy it forwards to ``other``; when the kernel does not
        accept host (CPU) arrays, to ``slow``.
    """
    np = checker._np
    plan = checker.plan
    # The generated checks accept numpy arrays, which live in host memory: a kernel whose
    # manifest does not accept host arrays (argument_device_types) takes the full path.
    if not plan.host_arrays:
        return lambda *args: slow(args)
    namespace: dict[str, Any] = {"slow": slow}
    if other is not None:
        make_other = other

        def resolve(args: tuple[Any, ...]) -> Any:
            # Made once, then called directly: the generated code reads ``slow`` from here.
            namespace["slow"] = resolved = make_other()
            return resolved(args)

        namespace["slow"] = resolve
    if np is None:
        return lambda *args: namespace["slow"](args)
    import tvm_ffi

    params = plan.params
    alignment = plan.allocation_alignment
    namespace |= {
        "ndarray": np.ndarray,
        "empty": np.empty,
        "uint8": np.dtype("uint8"),
        "from_dlpack": tvm_ffi.from_dlpack,
        "launch": launch,
        "separate": strides_separate,
        # (array, view) pairs in one slot each: a single store is atomic under the GIL, so
        # concurrent callers never pair one array with another array's view.
        "last": [(None, None, None, None)] * len(params),
    }
    lines = ["def call(*args):"]
    caller = plan.caller
    names = [f"a{i}" for i in caller]
    lines.append(f"    if len(args) != {len(caller)}:")
    lines.append("        return slow(args)")
    if names:
        lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
    bound: set[str] = set()
    # The kernel's index width and aliasing assumptions (tl_runtime.argument_memory): a
    # new array with more elements, or a written array overlapping another, goes slow.
    limit = plan.max_elements
    aliasing = plan.check_aliasing
    if aliasing:
        lines.extend(_combination_lines(plan, namespace))
    for i in caller:
        spec = params[i]
        if not spec.is_tensor:
            lines.extend(_scalar_lines(i, spec))
        else:
            lines.extend(_tensor_lines(i, spec, namespace, bound, np, limit, aliasing))
    if aliasing:
        lines.extend(_overlap_lines(plan))
    out_names = []
    for k in plan.out_idx:
        spec = params[k]
        if not spec.dtype.buffer_formats:  # an ml_dtypes type: the full path wraps it
            return lambda *args: namespace["slow"](args)
        namespace[f"dt{k}"] = np.dtype(spec.dtype.name)
        dims = [str(d) if isinstance(d, int) else f"sym_{d}" for d in spec.shape]
        size = " * ".join([str(spec.dtype.itemsize), *dims])
        # Over-allocate raw bytes and view them at the first aligned address (what
        # checker.allocate does, inline: this is most of an out_idx call's cost).
        lines += [
            f"    n{k} = {size}",
            *_output_limit_lines(k, plan),
            f"    if not n{k}:",  # zero-size: the full path gives it compact strides
            "        return slow(args)",
            f"    r{k} = empty(n{k} + {alignment}, uint8)",
            f"    p{k} = (-from_dlpack(r{k}, require_alignment=0).data_ptr()) & {alignment - 1}",
            f"    o{k} = r{k}[p{k} : p{k} + n{k}].view(dt{k})",
        ]
        if len(spec.shape) != 1:
            lines.append(f"    o{k} = o{k}.reshape(({', '.join(dims)},))")
        lines.append(f"    v{k} = from_dlpack(o{k}, require_alignment={spec.alignment})")
        out_names.append(f"o{k}")
    call_args = ", ".join(f"v{i}" if params[i].is_tensor else f"a{i}" for i in range(len(params)))
    lines.append(f"    launch({call_args})")
    if not out_names:
        lines.append("    return None")
    elif len(out_names) == 1:
        lines.append(f"    return {out_names[0]}")
    else:
        lines.append(f"    return ({', '.join(out_names)},)")
    source = "\n".join(lines) + "\n"
    # Generated from the validated manifest only (identifiers and ints), never from call data.
    exec(compile(source, f"<tl_runtime fast path: {plan.kernel}>", "exec"), namespace)
    call: Callable[..., Any] = namespace["call"]
    call.__doc__ = source
    return call


def _scalar_lines(i: int, spec: ParamPlan) -> list[str]:
    info = spec.dtype
    if not spec.fast:  # float16/bfloat16/float8 scalars: the full path converts them
        return ["    return slow(args)"]
    if info.is_integer:
        # tvm-ffi passes ints as int64: a larger uint64 takes the full path, which converts.
        high = min(int(info.high or 0), 2**63 - 1)
        return [
            f"    if type(a{i}) is not int or not {info.low} <= a{i} <= {high}:",
            "        return slow(args)",
        ]
    if info.kind == "bool":
        return [f"    if type(a{i}) is not bool:", "        return slow(args)"]
    # float32 and float64; what rounds past float32's range (DtypeInfo.overflow) goes to
    # the full path, which refuses it. inf and nan go there too (it accepts them).
    limit = info.overflow
    guard = "" if limit is None else f" or not -{limit!r} < a{i} < {limit!r}"
    return [f"    if type(a{i}) is not float{guard}:", "        return slow(args)"]


def _caller_tensors(plan: CallPlan) -> list[int]:
    return [i for i in plan.caller if plan.params[i].is_tensor]


def _combination_lines(plan: CallPlan, namespace: dict[str, Any]) -> list[str]:
    """Kernels that write a caller array: the last arrays are cached as one combination.

    ``state[0]`` holds the cache entry (array, view, shape, strides) of every caller tensor
    of the last call whose combination passed the overlap check, stored in one go (atomic
    under the GIL), so a call whose arrays all hit the cache is a combination already
    checked; a call with any new array sets ``fresh`` and checks the overlap before caching
    its combination.
    """
    tensors = _caller_tensors(plan)
    namespace["state"] = [((None, None, None, None),) * len(tensors)]
    return ["    fresh = False", f"    {', '.join(f'c{i}' for i in tensors)}, = state[0]"]


def _overlap_lines(plan: CallPlan) -> list[str]:
    """A written caller tensor sharing a byte with another caller tensor goes slow."""
    tensors = _caller_tensors(plan)
    params = plan.params
    pairs = [
        f"l{w} < h{o} and l{o} < h{w}"
        for w in tensors
        if params[w].written
        for o in tensors
        if o != w and not (params[o].written and o < w)  # each pair once
    ]
    ranges = [
        line
        for i in tensors
        for line in (
            f"        l{i} = v{i}.data_ptr()",
            f"        h{i} = l{i} + "
            + (
                f"a{i}.nbytes"
                if params[i].strides is None
                else f"{_element_span(i, params[i])} * {params[i].dtype.itemsize}"
            ),
        )
    ]
    entries = ", ".join(_entry(i, params[i]) for i in tensors)
    return [
        "    if fresh:",
        *ranges,
        f"        if {' or '.join(pairs)}:",
        "            return slow(args)",
        f"        state[0] = ({entries},)",
    ]


def _dim_value(dim: int | str) -> str:
    """The expression of a param's dim in the generated code (bound before it is read)."""
    return str(dim) if isinstance(dim, int) else f"sym_{dim}"


def _element_span(i: int, spec: ParamPlan) -> str:
    """Elements from the first to the last one a caller tensor addresses (as generated code).

    C-contiguous: its size. Declared strides (checked non-negative): one more than the
    highest element offset, as ``tl_runtime.argument_memory.element_span`` counts.
    """
    if spec.strides is None:
        return f"a{i}.size"
    terms = [
        f"({_dim_value(dim)} - 1) * {_dim_value(stride)}"
        for dim, stride in zip(spec.shape, spec.strides, strict=True)
    ]
    return "(" + " + ".join([*terms, "1"]) + ")"


def _static_span(spec: ParamPlan) -> int:
    """The element span of a param whose static dims and strides are all known."""
    if 0 in spec.shape:
        return 0
    reach = sum(
        (d - 1) * s
        for d, s in zip(spec.shape, spec.strides or (), strict=True)
        if isinstance(d, int) and isinstance(s, int)
    )
    return reach + 1


def _is_static(spec: ParamPlan) -> bool:
    """Whether every dim (and declared stride) of the param is a number."""
    return all(isinstance(d, int) for d in (*spec.shape, *(spec.strides or ())))


def _layout_can_change(spec: ParamPlan) -> bool:
    """Whether an array that passes the checks again may have a layout its cached view lacks.

    The checks before the cache pin the dtype, the rank, every static dim and stride,
    C-contiguity and (numpy keeps it in place) the element count. So a C-contiguous
    parameter with at most one symbolic dim has one possible shape; two or more
    symbolic dims can be traded in place (``a.shape = (6, 4)`` after ``(4, 6)``), and
    symbolic strides can be set in place (``a.strides = ...``).
    """
    symbolic_dims = sum(isinstance(d, str) for d in spec.shape)
    if spec.strides is None:
        return symbolic_dims >= 2
    return not _is_static(spec)


def _entry(i: int, spec: ParamPlan) -> str:
    """The cache entry of a caller tensor: (array, view, shape, strides) as generated code.

    A layout the checks pin needs no shape or strides; one that can change in place
    keeps the shape (and declared strides) the view was made for, so that an array
    reshaped in place since (``a.shape = ...``, ``a.strides = ...``) is exported again.
    """
    if not _layout_can_change(spec):
        return f"(a{i}, v{i}, None, None)"
    shape = "None" if all(isinstance(d, int) for d in spec.shape) else f"s{i}"
    return f"(a{i}, v{i}, {shape}, {f't{i}' if spec.strides is not None else 'None'})"


def _stride_lines(i: int, spec: ParamPlan, bound: set[str], limit: int) -> list[str]:
    """Every stride of a numpy array against the param's declared (element) strides.

    Byte strides that are negative or not a whole number of elements go slow (the full
    path decides them); a symbolic stride is bound on first sight, then compared.
    """
    assert spec.strides is not None
    itemsize = spec.dtype.itemsize
    out = [f"    t{i} = a{i}.strides"]
    if all(isinstance(s, int) for s in spec.strides):
        byte_strides = tuple(int(s) * itemsize for s in spec.strides)
        return [*out, f"    if t{i} != {byte_strides!r}:", "        return slow(args)"]
    out += [f"    if len(t{i}) != {len(spec.strides)}:", "        return slow(args)"]
    for axis, stride in enumerate(spec.strides):
        if isinstance(stride, int):
            out += [f"    if t{i}[{axis}] != {stride * itemsize}:", "        return slow(args)"]
        elif stride in bound:
            out += [
                f"    if t{i}[{axis}] != sym_{stride} * {itemsize}:",
                "        return slow(args)",
            ]
        else:
            out += [
                f"    if t{i}[{axis}] < 0 or t{i}[{axis}] % {itemsize}:",
                "        return slow(args)",
                f"    sym_{stride} = t{i}[{axis}] // {itemsize}",
            ]
            bound.add(stride)
    # A stride-0 dim spans one element however long it is: every dim must fit the index
    # width on its own (the kernel loops over it).
    dims = [f"s{i}[{axis}] > {limit}" for axis, d in enumerate(spec.shape) if isinstance(d, str)]
    if dims:
        out += [f"    if {' or '.join(dims)}:", "        return slow(args)"]
    return out


def _output_limit_lines(k: int, plan: CallPlan) -> list[str]:
    """An ``out_idx`` output beyond the index width goes slow (which refuses it)."""
    spec = plan.params[k]
    same_as_input = any(
        plan.params[i].shape == spec.shape and plan.params[i].strides is None
        for i in plan.caller
        if plan.params[i].is_tensor
    )
    if same_as_input:  # a C-contiguous input's own element count was bounded already
        return []
    return [
        f"    if n{k} > {plan.max_elements * spec.dtype.itemsize}:",
        "        return slow(args)",
    ]


def _tensor_lines(
    i: int,
    spec: ParamPlan,
    namespace: dict[str, Any],
    bound: set[str],
    np: Any,
    limit: int,
    aliasing: bool,
) -> list[str]:
    if not spec.dtype.buffer_formats:  # an ml_dtypes type: numpy cannot export it itself
        return ["    return slow(args)"]
    namespace[f"dt{i}"] = np.dtype(spec.dtype.name)
    strided = spec.strides is not None
    layout = "" if strided else f" or not a{i}.flags.c_contiguous"
    out = [
        f"    if type(a{i}) is not ndarray or a{i}.dtype is not dt{i}{layout}:",
        "        return slow(args)",
    ]
    static = _is_static(spec)
    static_size = math.prod(d for d in spec.shape if isinstance(d, int))
    if strided:
        static_size = _static_span(spec)
    if static and (static_size > limit or any(d > limit for d in spec.shape if isinstance(d, int))):
        return ["    return slow(args)"]  # every call is refused by the full path
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
    if strided:
        out += _stride_lines(i, spec, bound, limit)
    # The same array again reuses its view, unless the kernel writes it and it was made
    # read-only since (the full path refuses that), or its shape or strides changed in
    # place since the view was made (where the checks above leave room for that).
    hit = f"a{i} is c{i}[0]"
    if _layout_can_change(spec):
        if not all(isinstance(d, int) for d in spec.shape):
            hit += f" and s{i} == c{i}[2]"
        if strided:
            hit += f" and t{i} == c{i}[3]"
    if spec.written:
        hit += f" and a{i}.flags.writeable"
    out += [
        *([] if aliasing else [f"    c{i} = last[{i}]"]),  # aliasing: unpacked from state
        f"    if {hit}:",
        f"        v{i} = c{i}[1]",
        "    else:",
        # Zero-size arrays carry zero strides in numpy: the full path re-views them.
        f"        if not a{i}.size:",
        "            return slow(args)",
        # A written array two of whose elements may share memory: the full path decides.
        *(
            [
                f"        if not separate(a{i}.shape, a{i}.strides):",
                "            return slow(args)",
            ]
            if strided and spec.written
            else []
        ),
        *(
            []
            if static
            else [
                f"        if {_element_span(i, spec)} > {limit}:",
                "            return slow(args)",
            ]
        ),
        # What the export would refuse is tested first: a refusal raises, and a raise with
        # its traceback costs tens of us on every call with that array. Read-only arrays
        # (numpy cannot export them) go to the full path, which copies them; so do
        # pointers below the param's alignment (exported without tvm-ffi's check, then
        # tested here), which the full path copies, or refuses for a written param.
        *(
            []
            if spec.written
            else [f"        if not a{i}.flags.writeable:", "            return slow(args)"]
        ),
        "        try:",
        f"            v{i} = from_dlpack(a{i}, require_alignment=0)",
        "        except Exception:",  # an export failing otherwise: the full path says why
        "            return slow(args)",
        *(
            [f"        if v{i}.data_ptr() & {spec.alignment - 1}:", "            return slow(args)"]
            if spec.alignment > 1
            else []
        ),
    ]
    # Aliasing kernels cache the whole combination once its overlap check passed.
    out.append("        fresh = True" if aliasing else f"        last[{i}] = {_entry(i, spec)}")
    return out
