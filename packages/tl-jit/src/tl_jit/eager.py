"""``@jit`` on an eager function: binding, specialization, caching and dispatch.

An eager function takes its tensors and returns its outputs::

    @tl_jit.jit
    def gemm(A, B, C, dtype: T.dtype = T.float16, block_M: int = 64):
        M, N, K = T.const("M N K")
        A: T.Tensor[[M, K], dtype]
        ...

    gemm(a, b, c)

A call binds the template parameters (defaults applied) and each ``T.const`` symbol
(from the axis of the tensor where it first appears directly in a declared shape, or
from a keyword of its name), builds the kernel for that specialization with
`tl_ir.eager` (the classic front end's IR), compiles it with the classic
`compile_with_context` (same passes, disk cache, runtime) and calls it. The next
call with the same template arguments and ``T.const`` values is a dictionary lookup
keyed by a binder generated from the signature. ``T.dynamic`` dims are not part of
the key: they stay symbolic in the one kernel.
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tl_jit import env
from tl_jit.compiler import compile_with_context, create_context
from tl_jit.kernel import JITKernel

__all__ = ["EagerJITFunction", "par_compile"]


def _contiguous(shape: Sequence[int]) -> tuple[int, ...]:
    strides: list[int] = []
    step = 1
    for dim in reversed(shape):
        strides.append(step)
        step *= dim
    return tuple(reversed(strides))


def _stride(value: Any, axis: int) -> int:
    """``value``'s stride along ``axis`` in elements (numpy's are in bytes)."""
    stride = getattr(value, "stride", None)
    if callable(stride):
        return int(stride(axis))
    return int(value.strides[axis] // value.itemsize)


def array_dims(value: Any) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """``(shape, strides in elements)`` of an array argument: numpy, torch, any DLPack
    producer, or a ``T.Tensor((M, N), dtype)`` placeholder; None for anything else."""
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    if type(value).__module__ == "numpy" and hasattr(value, "itemsize"):
        itemsize = int(value.itemsize) or 1
        return tuple(int(d) for d in shape), tuple(int(s) // itemsize for s in value.strides)
    stride = getattr(value, "stride", None)
    if callable(stride) and hasattr(value, "__dlpack__"):  # torch
        return tuple(int(d) for d in shape), tuple(int(s) for s in stride())
    ty = getattr(value, "ty", None)
    if ty is not None and hasattr(ty, "shape"):  # a T.Tensor placeholder (a TVM buffer)
        try:
            dims = tuple(int(d) for d in ty.shape)
        except (TypeError, ValueError):
            return None
        strides = tuple(int(s) for s in ty.strides) if len(ty.strides) else _contiguous(dims)
        return dims, strides
    if hasattr(value, "__dlpack__"):
        import tvm_ffi

        tensor = tvm_ffi.from_dlpack(value, require_alignment=0)
        return tuple(int(d) for d in tensor.shape), tuple(int(s) for s in tensor.strides)
    return None


def _describe(value: object) -> str:
    kind = type(value)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    return name


def _is_dtype_annotation(annotation: object) -> bool:
    if isinstance(annotation, str):
        return annotation.endswith("dtype")
    return getattr(annotation, "__name__", None) == "dtype"


class EagerJITFunction:
    """What ``@jit`` returns for an eager function: call it with the tensors (and any
    template arguments) to run the kernel; ``compile``, ``get_tir`` and
    ``par_compile`` build ahead of time.

    Attributes:
        func: the decorated Python function.
        options: the compile options (target, target_host, execution_backend,
            pass_configs, verbose).
    """

    def __init__(self, func: Callable[..., Any], **options: Any) -> None:
        if options.get("out_idx") is not None:
            raise ValueError(
                f"{func.__qualname__}: out_idx is for kernels returned by a builder; an "
                "eager kernel's outputs are the tensors it creates with T.empty and returns"
            )
        self.func = func
        self.options = {k: v for k, v in options.items() if k != "out_idx"}
        self._python_signature = inspect.signature(func)
        self._analysis: Any = None
        self._binder: Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]] | None = None
        self._fast: dict[tuple[Any, ...], JITKernel] = {}
        self._specializations: dict[tuple[Any, ...], JITKernel] = {}
        self._bindings_by_template: dict[str, dict[str, tuple[str, str, int]]] = {}
        functools.update_wrapper(self, func)

    # ------------------------------------------------------------------ analysis
    @property
    def analysis(self) -> Any:
        """The `tl_ir.eager.EagerSignature` of the function (read once, on first use)."""
        if self._analysis is None:
            from tl_ir.eager import analyze

            self._analysis = analyze(self.func)
            self._binder = self._make_binder()
        return self._analysis

    def _make_binder(self) -> Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]] | None:
        """Generate, from the user's signature, the binder ``(key, kernel arguments)`` and
        the dispatcher installed as this object's ``__call__``: Python's own argument
        binding, one tuple build and one dictionary lookup, then the kernel's call."""
        analysis = self._analysis
        if analysis.bindings is None or len(analysis.bindings) != len(analysis.consts):
            return None
        parts: list[str] = []
        forwarded: list[str] = []
        defaults: list[Any] = []
        keyword_only = False
        for parameter in self._python_signature.parameters.values():
            if parameter.kind is parameter.POSITIONAL_ONLY or parameter.name.startswith("__"):
                return None
            if parameter.kind is parameter.KEYWORD_ONLY and not keyword_only:
                parts.append("*")
                keyword_only = True
            if parameter.default is parameter.empty:
                parts.append(parameter.name)
            else:
                parts.append(f"{parameter.name}=__defaults[{len(defaults)}]")
                defaults.append(parameter.default)
            forwarded.append(f"{parameter.name!r}: {parameter.name}")
        key_items = list(analysis.template_params)
        for binding in analysis.bindings:
            if binding.where == "shape":
                key_items.append(f"{binding.param}.shape[{binding.axis}]")
            else:
                key_items.append(f"__stride({binding.param}, {binding.axis})")
        key = "(" + "".join(k + ", " for k in key_items) + ")"
        arguments = ", ".join(p.name for p in analysis.kernel_params)
        name = analysis.name
        source = (
            f"def __bind({', '.join(parts)}):\n"
            f"    return {key}, ({arguments}{',' if arguments else ''})\n"
            f"def {name}({', '.join([*parts, '**__extra'])}):\n"
            f"    try:\n"
            f"        kernel = __fast[{key}]\n"
            f"    except Exception:\n"
            f"        kernel = None\n"
            f"    if kernel is None or __extra:\n"
            f"        return __slow((), {{{''.join(f + ', ' for f in forwarded)}**__extra}})\n"
            f"    return kernel({arguments})\n"
        )
        namespace: dict[str, Any] = {
            "__defaults": defaults,
            "__stride": _stride,
            "__fast": self._fast,
            "__slow": self._call_slow,
        }
        exec(compile(source, f"<eager dispatch of {analysis.qualname}>", "exec"), namespace)
        dispatch = namespace[name]
        dispatch.__qualname__ = analysis.qualname
        # A per-instance subclass makes the generated function this object's __call__
        # (no extra frame between the user's call and the lookup).
        self.__class__ = type(
            "EagerJITFunction",
            (EagerJITFunction,),
            {"__call__": staticmethod(dispatch), "__module__": __name__},
        )
        binder: Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]] = namespace["__bind"]
        return binder

    # ------------------------------------------------------------------ binding
    def _bind(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any], *, need_tensors: bool
    ) -> tuple[dict[str, Any], dict[str, int], list[Any]]:
        """Template arguments, ``T.const`` values and kernel arguments of a call.

        Raises:
            TypeError: the arguments do not fit the signature, a tensor is missing or
                is not an array, a keyword names neither a parameter nor a T.const.
            ValueError: tensors disagree on a ``T.const``.
        """
        analysis = self.analysis
        qualname = analysis.qualname
        parameters = self._python_signature.parameters
        named = {k: v for k, v in kwargs.items() if k in parameters}
        extra = {k: v for k, v in kwargs.items() if k not in parameters}
        for name in extra:
            if name not in analysis.consts:
                symbols = (
                    f" (its T.const symbols: {', '.join(analysis.consts)})"
                    if analysis.consts
                    else ""
                )
                raise TypeError(
                    f"{qualname}() got an unexpected keyword argument {name!r}{symbols}"
                )
        try:
            bound = self._python_signature.bind_partial(*args, **named)
        except TypeError as exc:
            raise TypeError(f"{qualname}: {exc}") from None
        bound.apply_defaults()
        values = bound.arguments
        templates: dict[str, Any] = {}
        for name in analysis.template_params:
            if name not in values:
                raise TypeError(f"{qualname}: missing a required argument: {name!r}")
            value = values[name]
            if _is_dtype_annotation(parameters[name].annotation):
                from tl_ir.errors import UnknownDtypeError
                from tl_ir.language import dtype as dtype_object

                try:
                    value = dtype_object(value)  # torch/numpy/str spellings: one dtype
                except UnknownDtypeError as exc:
                    raise TypeError(f"{qualname}: parameter {name!r}: {exc}") from None
            templates[name] = value
        dims: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        kernel_args: list[Any] = []
        for param in analysis.kernel_params:
            present = param.name in values
            value = values.get(param.name)
            if not present:
                if need_tensors:
                    raise TypeError(f"{qualname}: missing a required argument: {param.name!r}")
                continue
            kernel_args.append(value)
            if param.kind == "scalar":
                continue
            found = array_dims(value)
            if found is None:
                if need_tensors:
                    raise TypeError(
                        f"{qualname}: parameter {param.name!r}: expected an array (numpy array, "
                        f"torch tensor or any DLPack producer), got {_describe(value)}"
                    )
                continue
            dims[param.name] = found
        consts = self._bind_consts(templates, extra, dims)
        return templates, consts, kernel_args

    def _const_bindings(self, templates: Mapping[str, Any]) -> dict[str, tuple[str, str, int]]:
        analysis = self.analysis
        if analysis.bindings is not None:
            return {b.symbol: (b.param, b.where, b.axis) for b in analysis.bindings}
        from tl_jit.keys import Unkeyable, canonical_value

        try:
            key = repr(canonical_value(dict(templates)))
        except Unkeyable:
            key = ""
        if key not in self._bindings_by_template:
            from tl_ir.eager import evaluate_bindings

            self._bindings_by_template[key] = evaluate_bindings(self.func, analysis, templates)
        return self._bindings_by_template[key]

    def _bind_consts(
        self,
        templates: Mapping[str, Any],
        extra: Mapping[str, Any],
        dims: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]],
    ) -> dict[str, int]:
        analysis = self.analysis
        qualname = analysis.qualname
        if not analysis.consts:
            return {}
        bindings = self._const_bindings(templates)
        unbound = [s for s in analysis.consts if s not in bindings]
        if unbound:
            from tl_ir.errors import KernelSyntaxError

            raise KernelSyntaxError(
                f"{qualname}: T.const {unbound[0]!r} is never a dim of a declared tensor shape "
                "or strides by itself (it is unused, or used only inside expressions such as "
                f"{unbound[0]} * 2); use it directly in a declaration, or declare the derived "
                "size as its own T.const"
            )
        consts: dict[str, int] = {}
        for symbol in analysis.consts:
            param, where, axis = bindings[symbol]
            if symbol in extra:
                value = extra[symbol]
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise TypeError(
                        f"{qualname}: T.const {symbol!r}: expected a positive int, got {value!r}"
                    )
                consts[symbol] = value
                continue
            if param not in dims:
                raise TypeError(
                    f"{qualname}: T.const {symbol!r} is read from {param}."
                    f"{'shape' if where == 'shape' else 'strides'}[{axis}]: pass the tensor "
                    f"{param!r} or {symbol}=<int>"
                )
            shape, strides = dims[param]
            source = shape if where == "shape" else strides
            if axis >= len(source):
                raise ValueError(
                    f"{qualname}: parameter {param!r}: expected {axis + 1} or more dims "
                    f"(T.const {symbol!r} is its axis {axis}), got shape {list(shape)}"
                )
            consts[symbol] = int(source[axis])
        self._check_agreement(consts, dims)
        return consts

    def _check_agreement(
        self, consts: Mapping[str, int], dims: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]]
    ) -> None:
        """Every tensor whose declared shape names a ``T.const`` directly has that size."""
        import ast

        analysis = self.analysis
        variables = {v: s for s, v in analysis.const_variables.items()}
        for param in analysis.kernel_params:
            if param.name not in dims:
                continue
            shape, strides = dims[param.name]
            for where, node, actual in (
                ("shape", param.shape, shape),
                ("strides", param.strides, strides),
            ):
                if not isinstance(node, ast.List | ast.Tuple):
                    continue
                if len(node.elts) != len(actual):
                    raise ValueError(
                        f"{analysis.qualname}: parameter {param.name!r}: expected "
                        f"{len(node.elts)} dims, got {where} {list(actual)}"
                    )
                for axis, element in enumerate(node.elts):
                    if isinstance(element, ast.Name) and element.id in variables:
                        symbol = variables[element.id]
                        if actual[axis] != consts[symbol]:
                            raise ValueError(
                                f"{analysis.qualname}: parameter {param.name!r}: expected "
                                f"{where}[{axis}] == {symbol} == {consts[symbol]} (T.const "
                                f"{symbol!r} bound from an earlier tensor), got {where} "
                                f"{list(actual)}"
                            )

    # ------------------------------------------------------------------ compiling
    def _frontend_options(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        options = {**self.options, **overrides}
        options.pop("verbose", None)
        options["target"] = env.default_target(options.get("target", "auto"))
        options["execution_backend"] = env.default_execution_backend(
            options.get("execution_backend", "auto")
        )
        return options

    def _specialization_key(
        self, templates: Mapping[str, Any], consts: Mapping[str, int], overrides: Mapping[str, Any]
    ) -> tuple[Any, ...]:
        from tl_jit.keys import Unkeyable, canonical_value

        # Strings by their text: a dtype object and its name are one specialization.
        plain = {k: str(v) if isinstance(v, str) else v for k, v in templates.items()}
        try:
            rendered = repr(canonical_value(plain))
            options = repr(canonical_value(self._frontend_options(overrides))) if overrides else ""
        except Unkeyable:
            rendered, options = repr(sorted(templates.items(), key=lambda i: i[0])), repr(overrides)
        return rendered, tuple(sorted(consts.items())), options

    def build_ir(self, templates: Mapping[str, Any], consts: Mapping[str, int]) -> Any:
        """The `tl_ir.eager.EagerKernelIR` of one specialization (no compile)."""
        from tl_ir.eager import build_prim_func

        return build_prim_func(self.func, self.analysis, templates, consts)

    def _compile(
        self,
        templates: Mapping[str, Any],
        consts: Mapping[str, int],
        overrides: Mapping[str, Any] | None = None,
        *,
        ir: Any = None,
    ) -> JITKernel:
        overrides = dict(overrides or {})
        key = self._specialization_key(templates, consts, overrides)
        kernel = self._specializations.get(key)
        if kernel is not None:
            return kernel
        from tl_jit.keys import Unkeyable, frontend_key

        options = {**self.options, **overrides}
        front_key: str | None
        try:
            front_key = frontend_key(
                self.func,  # type: ignore[arg-type]
                {"eager": True, "templates": dict(templates), "consts": dict(consts)},
                self._frontend_options(overrides),
            )
        except (Unkeyable, AttributeError):
            front_key = None
        if front_key is not None and not env.cache_disabled():
            kernel = _load_memo(front_key)
        if kernel is None:
            if ir is None:
                ir = self.build_ir(templates, consts)
            context = create_context(
                options.get("target", "auto"),
                options.get("target_host"),
                options.get("execution_backend", "auto"),
            )
            kernel = compile_with_context(
                ir.prim_func,
                context,
                out_idx=list(ir.out_idx) or None,
                pass_configs=options.get("pass_configs"),
                verbose=bool(options.get("verbose", False)),
            )
            if front_key is not None and kernel.cache_key is not None and not env.cache_disabled():
                from tl_jit.cache import default_cache

                default_cache().write_record(
                    "frontend",
                    front_key,
                    {"ir_key": kernel.cache_key, "function": self.func.__qualname__},
                )
        self._specializations[key] = kernel
        return kernel

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the kernel on these tensors (compiling it for their specialization first
        if needed); returns the ``T.empty`` outputs in ``return`` order (one array, a
        tuple of them, or None for a kernel that writes its arguments in place).

        Raises:
            TypeError, ValueError: the arguments do not fit the declarations (naming
                the parameter; dtype and shape errors are the classic kernel call's).
            tl_ir.TileLangError: the kernel does not build.
            everything `tl_jit.compile` raises.
        """
        # The first call lands here: reading the analysis installs the generated
        # dispatcher as this object's __call__ for the calls after it.
        if self._analysis is None:
            self.analysis  # noqa: B018 - reading it installs the dispatcher
        return self._call_slow(args, kwargs)

    def _call_slow(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        templates, consts, arguments = self._bind(args, kwargs, need_tensors=True)
        kernel = self._compile(templates, consts)
        binder = self._binder
        if binder is not None:
            try:
                key, _ = binder(*args, **kwargs)
                self._fast[key] = kernel
            except Exception:
                pass
        return kernel(*arguments)

    def compile(self, *args: Any, **kwargs: Any) -> JITKernel:
        """Compile ahead of time: ``kernel.compile(M=1024, N=1024, dtype=T.float16)``.

        Tensors are optional (arrays or ``T.Tensor((M, N), dtype)`` placeholders give
        the ``T.const`` values from their shapes); keywords naming ``T.const`` symbols
        bind them; template parameters take their defaults. The returned kernel takes
        the inputs and returns the outputs.

        Raises:
            TypeError: a template argument or a ``T.const`` value is missing.
            everything calling the function raises.
        """
        templates, consts, _ = self._bind(args, kwargs, need_tensors=False)
        return self._compile(templates, consts)

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        """The kernel's PrimFunc for these arguments (bound as by `compile`; no compile)."""
        templates, consts, _ = self._bind(args, kwargs, need_tensors=False)
        return self.build_ir(templates, consts).prim_func

    get_prim_func = get_tir

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        """The generated source of the kernel `compile` returns for these arguments."""
        return self.compile(*args, **kwargs).get_kernel_source()

    def par_compile(
        self,
        configs: Iterable[Mapping[str, Any] | tuple[Any, ...]],
        num_workers: int | None = None,
        ignore_error: bool = False,
    ) -> list[JITKernel | None]:
        """Compile several specializations in parallel, with a progress bar.

        Args:
            configs: each a dict of keyword arguments or a tuple of positional ones, as
                `compile` takes them.
            num_workers: compile threads (default: one per CPU, at most one per config).
            ignore_error: a config that fails gives None (and a warning) instead of raising.

        Returns:
            The kernels, in the order of ``configs``.
        """
        specializations: list[tuple[dict[str, Any], dict[str, int], Any] | None] = []
        for config in configs:
            try:
                if isinstance(config, Mapping):
                    templates, consts, _ = self._bind((), config, need_tensors=False)
                elif isinstance(config, tuple):
                    templates, consts, _ = self._bind(config, {}, need_tensors=False)
                else:
                    raise TypeError(
                        f"{self.func.__qualname__}.par_compile: expected each config to be a "
                        f"dict or a tuple, got {_describe(config)}"
                    )
                # Parsing stays on this thread (the IR builder is per thread); only
                # lowering and building run in the workers.
                specializations.append((templates, consts, self.build_ir(templates, consts)))
            except Exception as exc:
                if not ignore_error:
                    raise
                _warn_failed(self.func.__qualname__, exc)
                specializations.append(None)

        def work(item: tuple[dict[str, Any], dict[str, int], Any] | None) -> JITKernel | None:
            if item is None:
                return None
            templates, consts, ir = item
            return self._compile(templates, consts, ir=ir)

        return _run_parallel(
            work, specializations, num_workers, ignore_error, f"{self.func.__qualname__}"
        )

    def __repr__(self) -> str:
        return f"<tl_jit.jit eager {self.func.__qualname__}>"


def _load_memo(front_key: str) -> JITKernel | None:
    from tl_jit.cache import default_cache

    cache = default_cache()
    record = cache.read_record("frontend", front_key)
    if record is None or not isinstance(record.get("ir_key"), str):
        return None
    runtime_kernel = cache.load(record["ir_key"])
    if runtime_kernel is None:
        return None
    return JITKernel(runtime_kernel, cache_key=record["ir_key"])


def _warn_failed(what: str, exc: BaseException) -> None:
    import warnings

    warnings.warn(f"{what}: compile failed: {type(exc).__name__}: {exc}", stacklevel=3)


def _run_parallel(
    work: Callable[[Any], JITKernel | None],
    items: Sequence[Any],
    num_workers: int | None,
    ignore_error: bool,
    label: str,
) -> list[JITKernel | None]:
    import os

    from rich.progress import Progress

    if not items:
        return []
    workers = num_workers or max(1, min(len(items), os.cpu_count() or 1))
    results: list[JITKernel | None] = [None] * len(items)
    with (
        concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="tl-par-compile") as pool,
        Progress(transient=True) as progress,
    ):
        task = progress.add_task(f"compiling {label}", total=len(items))
        futures = {pool.submit(work, item): index for index, item in enumerate(items)}
        for future in concurrent.futures.as_completed(futures):
            index = futures[future]
            try:
                results[index] = future.result()
            except Exception as exc:
                if not ignore_error:
                    for other in futures:
                        other.cancel()
                    raise
                _warn_failed(f"{label} config {index}", exc)
            progress.advance(task)
    return results


def par_compile(
    funcs: Iterable[Any],
    out_idx: Any = None,
    target: object = "auto",
    target_host: object = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, object] | None = None,
    verbose: bool = False,
    num_workers: int | None = None,
    ignore_error: bool = False,
) -> list[JITKernel | None]:
    """Compile several PrimFuncs in parallel threads with a progress bar (the options are
    `tl_jit.compile`'s, shared by all).

    Returns:
        The kernels in the order of ``funcs`` (None for a failure with ``ignore_error``).

    Raises:
        the first compile error, unless ``ignore_error``.
    """
    functions = list(funcs)
    context = create_context(target, target_host, execution_backend)

    def work(func: Any) -> JITKernel:
        return compile_with_context(
            func, context, out_idx=out_idx, pass_configs=pass_configs, verbose=verbose
        )

    return _run_parallel(work, functions, num_workers, ignore_error, "kernels")
