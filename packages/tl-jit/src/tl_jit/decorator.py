"""``@jit``: a function of compile-time arguments returning a PrimFunc -> compiled kernels.

Each distinct argument set compiles once; the kernel is held in memory (while the
globals, class attributes and closure values the builder reads are unchanged:
`tl_jit.digest_guard`) and on disk. A call whose arguments and function code were seen before (in any
process) is answered from the front-end memo without running the function or
importing tvm (docs/cache.md).
"""

from __future__ import annotations

import functools
import inspect
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, overload

from tl_jit import checked, env
from tl_jit.by_reference import CopiedAsItself, reduce_by_reference
from tl_jit.compiler import OutIdx, compile_with_context, create_context, report_origin
from tl_jit.digest_guard import UNMEMOIZED, FunctionDigest, function_parts, same_parts
from tl_jit.env_reads import EnvReads
from tl_jit.interpreted import interpret_requested
from tl_jit.kernel import JITKernel
from tl_jit.pass_configs import check_compile_flags, check_verbose, normalize_pass_configs
from tl_runtime.fork_safety import fork_waits_for_this

_KERNEL_ANNOTATION = re.compile(r"\b(Tensor|StridedTensor|Buffer)\s*[\[(]")


def _is_kernel_annotation(annotation: object) -> bool:
    """Whether a parameter annotation declares a kernel tensor (``T.Tensor((64,), dtype)``),
    evaluated or as a PEP 563 string."""
    if isinstance(annotation, str):
        return _KERNEL_ANNOTATION.search(annotation) is not None
    return type(annotation).__module__.partition(".")[0] in ("tvm", "tl_ir")


class JITFunction(CopiedAsItself):
    """The object ``@jit`` returns: call it with compile-time arguments to get a `JITKernel`.

    Attributes:
        func: the decorated Python function (returns a PrimFunc).
        options: the compile options (out_idx, target, target_host, execution_backend,
            pass_configs, verbose).
    """

    def __init__(self, func: Callable[..., Any], **options: Any) -> None:
        if not callable(func):
            raise TypeError(f"jit: expected a function returning a PrimFunc, got {func!r}")
        self.func = func
        self.options = options
        self._signature = inspect.signature(func)
        self._signature_read = function_parts(func)
        # TileLang's eager style annotates the decorated function's own parameters with
        # T.Tensor(...); those are kernel values, not compile-time arguments.
        self._kernel_parameters = [
            name
            for name, parameter in self._signature.parameters.items()
            if _is_kernel_annotation(parameter.annotation)
        ]
        # function digest -> memory key -> the kernel and the environment variables its
        # builder read. The digest covers the globals, class attributes, closure values
        # and defaults the builder reads (`FunctionDigest`, rechecked by identity per
        # call); `_current` is the digest last followed with its table, published as one
        # tuple so that threads compiling at once never pair a digest with another table.
        self._digest = FunctionDigest(func)
        self._tables: dict[str, dict[str, tuple[JITKernel, EnvReads]]] = {}
        self._current: tuple[str | None, dict[str, tuple[JITKernel, EnvReads]]] = (None, {})
        functools.update_wrapper(self, func)

    def bind_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments by parameter name, defaults applied.

        Raises:
            TypeError: the arguments do not fit the function's signature.
        """
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.func.__qualname__}: {exc}") from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _frontend_options(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        options = {**self.options, **overrides}
        options.pop("verbose", None)
        options["debug"] = checked.resolve_debug(options.get("debug"))
        options["target"] = env.default_target(options.get("target", "auto"))
        options["execution_backend"] = env.default_execution_backend(
            options.get("execution_backend", "auto")
        )
        return options

    def __call__(self, *args: Any, **kwargs: Any) -> JITKernel:
        """Compile (or fetch) the kernel for these compile-time arguments.

        Raises:
            TypeError: bad arguments, or the function did not return a PrimFunc.
            everything `tl_jit.compile` raises.
        """
        return self.compile(args, kwargs)

    def compile(
        self,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> JITKernel:
        """Like calling the object, with compile options overridden (``target="llvm"``...).

        Raises:
            NotImplementedError: the function is written in TileLang's eager style.
        """
        self._refuse_eager_style()
        started = time.perf_counter()
        digest, kernels = self._follow_digest()  # first: assigned defaults change the binding
        arguments = self.bind_arguments(args, kwargs or {})
        options = {**self.options, **overrides}
        verbose = bool(options.get("verbose", False))
        if interpret_requested():  # nothing cached: the interpreter runs the IR as built
            return self._compile_fresh(arguments, options)[0]
        from tl_jit import memo
        from tl_jit.env_reads import unchanged
        from tl_jit.keys import Unkeyable, canonical_value, frontend_key

        # In memory: the table of the function's digest as of now (so a changed global,
        # class attribute or closure value is seen), keyed by arguments and options.
        try:
            memory_key: str | None = repr(canonical_value(dict(sorted(arguments.items())))) + repr(
                canonical_value(dict(sorted(self._frontend_options(overrides).items())))
            )
        except Unkeyable:
            memory_key = None
        if digest == UNMEMOIZED:
            memory_key = None
        if memory_key is not None:
            held = kernels.get(memory_key)
            if held is not None and unchanged(held[1]):
                if verbose:
                    report_origin(self.func.__qualname__, "memory", started, _described(held[0]))
                return held[0]
        front_key: str | None
        try:
            front_key = frontend_key(
                self.func,  # type: ignore[arg-type]
                arguments,
                self._frontend_options(overrides),
            )
        except (Unkeyable, AttributeError):
            front_key = None
        found = None
        if front_key is not None and not env.cache_disabled():
            found = memo.load(front_key)
            if found is not None and verbose:
                report_origin(
                    self.func.__qualname__,
                    "disk (front-end memo: no tvm import, no build)",
                    started,
                    _described(found[0]),
                )
        if found is None:
            found = self._compile_fresh(arguments, options)
            if front_key is not None and not env.cache_disabled():
                memo.store(front_key, found[0], self.func.__qualname__, found[1])
        if memory_key is not None:
            kernels[memory_key] = found  # the table of the digest it was built under
            # What the builder changed itself while building (a list it appends to) is
            # not an input: its kernels stay valid under the digest it left behind.
            after, kernels_after = self._follow_digest()
            if after != digest:
                kernels_after.update(kernels)
        return found[0]

    @property
    def _kernels(self) -> dict[str, tuple[JITKernel, EnvReads]]:
        """The in-memory kernels of the digest last followed (tests clear it)."""
        return self._current[1]

    def _follow_digest(self) -> tuple[str, dict[str, tuple[JITKernel, EnvReads]]]:
        """The function's digest as of now and its table of kernels (made current)."""
        digest = self._digest.current()
        current = self._current
        if digest == current[0]:
            return digest, current[1]
        parts = function_parts(self.func)
        if not same_parts(parts, self._signature_read):  # code or defaults assigned
            self._signature = inspect.signature(self.func)
            self._signature_read = parts
        # setdefault is one atomic step: threads following the same digest share a table
        kernels = self._tables.setdefault(digest, {})
        self._current = (digest, kernels)
        return digest, kernels

    def _refuse_eager_style(self) -> None:
        if self._kernel_parameters:
            raise NotImplementedError(
                f"{self.func.__qualname__}: TileLang's eager-style @jit (kernel parameters "
                f"annotated with T.Tensor: {', '.join(self._kernel_parameters)}) is not "
                "supported; write a function of compile-time arguments that returns a "
                "@T.prim_func kernel"
            )

    def _compile_fresh(
        self, arguments: Mapping[str, Any], options: Mapping[str, Any]
    ) -> tuple[JITKernel, EnvReads]:
        """Run the builder (recording the environment variables it reads) and compile."""
        with fork_waits_for_this():  # builds the IR (tvm) and compiles: a fork waits
            return self._build_and_compile(arguments, options)

    def _build_and_compile(
        self, arguments: Mapping[str, Any], options: Mapping[str, Any]
    ) -> tuple[JITKernel, EnvReads]:
        from tl_jit.env_reads import freeze, recording

        with recording() as reads:
            prim_func = self.func(**arguments)
        from tvm.tirx import PrimFunc

        if not isinstance(prim_func, PrimFunc):
            raise TypeError(
                f"{self.func.__qualname__}: a @jit function must return a PrimFunc "
                f"(a @T.prim_func kernel), it returned {type(prim_func).__name__}"
            )
        context = create_context(
            options.get("target", "auto"),
            options.get("target_host"),
            options.get("execution_backend", "auto"),
        )
        kernel = compile_with_context(
            prim_func,
            context,
            out_idx=options.get("out_idx"),
            pass_configs=options.get("pass_configs"),
            verbose=bool(options.get("verbose", False)),
            debug=options.get("debug"),
        )
        return kernel, freeze(reads)

    def get_prim_func(self, *args: Any, **kwargs: Any) -> Any:
        """Run the decorated function and return its PrimFunc (no compile).

        Raises:
            NotImplementedError: the function is written in TileLang's eager style.
        """
        self._refuse_eager_style()
        return self.func(**self.bind_arguments(args, kwargs))

    get_tir = get_prim_func

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        """The generated source of the kernel that calling the object with these
        arguments returns (compiled, or fetched from the caches)."""
        return self.compile(args, kwargs).get_kernel_source()

    def par_compile(
        self,
        configs: Iterable[Mapping[str, Any] | tuple[Any, ...]],
        num_workers: int | None = None,
        ignore_error: bool = False,
    ) -> list[JITKernel | None]:
        """Compile several specializations, as TileLang's ``par_compile``: the builder
        runs for each config on this thread (the kernel parser keeps per-thread state),
        the builds in parallel threads (`tl_jit.parallel.par_compile`, with this
        function's compile options).

        Args:
            configs: each a dict of keyword arguments or a tuple of positional ones.
            num_workers: compile threads (default: one per CPU, at most one per config).
            ignore_error: a config that fails gives None (and a warning) instead of raising.

        Returns:
            The kernels, in the order of ``configs``.

        Raises:
            TypeError: a config is neither a dict nor a tuple.
            the first builder or compile error, unless ``ignore_error``.
        """
        from tl_jit import parallel

        self._refuse_eager_style()
        funcs: list[Any] = []
        built: list[int] = []
        listed = list(configs)
        for config in listed:
            if not isinstance(config, Mapping | tuple):
                raise TypeError(
                    f"{self.func.__qualname__}.par_compile: expected each config to be a "
                    f"dict or a tuple, got {type(config).__name__}"
                )
        for index, config in enumerate(listed):
            try:
                if isinstance(config, Mapping):
                    funcs.append(self.get_prim_func(**config))
                else:
                    funcs.append(self.get_prim_func(*config))
            except Exception as exc:
                if not ignore_error:
                    raise
                parallel.warn_failed(f"{self.func.__qualname__}{config!r}", exc)
                continue
            built.append(index)
        options = self.options
        kernels = parallel.par_compile(
            funcs,
            out_idx=options.get("out_idx"),
            target=options.get("target", "auto"),
            target_host=options.get("target_host"),
            execution_backend=options.get("execution_backend", "auto"),
            pass_configs=options.get("pass_configs"),
            verbose=bool(options.get("verbose", False)),
            num_workers=num_workers,
            ignore_error=ignore_error,
        )
        results: list[JITKernel | None] = [None] * len(listed)
        for index, kernel in zip(built, kernels, strict=True):
            results[index] = kernel
        return results

    def __repr__(self) -> str:
        return f"<tl_jit.jit {self.func.__qualname__}>"

    def __reduce__(self) -> Any:
        """Pickled by reference (module and qualified name), as a function is."""
        return reduce_by_reference(self, self.func, "the @jit function")


def _described(kernel: Any) -> str:
    """The facts `report_origin` prints about a kernel: its target, adapter and key."""
    manifest = getattr(kernel, "manifest", None)
    if manifest is None:
        return "interpreted"
    key = kernel.cache_key[:16] if getattr(kernel, "cache_key", None) else "none"
    return (
        f"target {manifest.target.get('kind')}, execution backend "
        f"{manifest.execution_backend}, key {key}"
    )


@overload
def jit(func: Callable[..., Any], /) -> JITFunction: ...


@overload
def jit(
    func: None = None,
    /,
    *,
    out_idx: OutIdx = None,
    target: object = "auto",
    target_host: object = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, object] | None = None,
    verbose: bool = False,
    debug: bool | None = None,
    compile_flags: list[str] | str | None = None,
) -> Callable[[Callable[..., Any]], JITFunction]: ...


def jit(
    func: Callable[..., Any] | None = None,
    /,
    *,
    out_idx: OutIdx = None,
    target: object = "auto",
    target_host: object = None,
    execution_backend: str = "auto",
    pass_configs: Mapping[str, object] | None = None,
    verbose: bool = False,
    debug: bool | None = None,
    compile_flags: list[str] | str | None = None,
) -> JITFunction | Callable[[Callable[..., Any]], JITFunction]:
    """Decorate a function of compile-time arguments that returns a PrimFunc.

    ``@jit`` or ``@jit(out_idx=[-1], target="c", ...)``: the options are those of
    `tl_jit.compile`. Calling the result with compile-time arguments returns a
    `JITKernel`, compiled once per distinct argument set and cached in memory and
    on disk.

    ``debug=True`` builds the kernel in checked mode (`tl_jit.compile`'s ``debug``);
    None (the default) lets ``TL_DEBUG`` decide at each compile. ``compile_flags``
    (TileLang's device compiler flags) is checked and not applied
    (`tl_jit.pass_configs.check_compile_flags`).

    Raises:
        TypeError: ``out_idx``, ``debug``, ``verbose`` or ``compile_flags`` is malformed,
            or what is decorated is not callable.
        ValueError: ``pass_configs`` holds a ``tl.*`` key TileLang does not define.
    """
    from tl_runtime.out_idx import normalize_out_idx

    normalize_out_idx(out_idx, None)  # types now; the indices once the kernel is known
    check_compile_flags(compile_flags)
    check_verbose(verbose)
    options = {
        "out_idx": out_idx,
        "target": target,
        "target_host": target_host,
        "execution_backend": execution_backend,
        "pass_configs": normalize_pass_configs(pass_configs),
        "verbose": verbose,
        "debug": checked.resolve_debug(debug) if debug is not None else None,
    }
    if func is not None:
        return _jit_function(func, options)

    def decorate(function: Callable[..., Any]) -> JITFunction:
        return _jit_function(function, options)

    return decorate


def _jit_function(func: Callable[..., Any], options: Mapping[str, Any]) -> JITFunction:
    """A `JITFunction` for a builder; an `EagerJITFunction` (tl_jit.eager) for a function
    written in TileLang's eager style."""
    from tl_jit.eager_style import is_eager_function

    if callable(func) and is_eager_function(func):
        from tl_jit.eager import EagerJITFunction

        return EagerJITFunction(func, **options)  # type: ignore[return-value]
    return JITFunction(func, **options)
