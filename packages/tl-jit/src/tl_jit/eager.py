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

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tl_jit import env
from tl_jit.compiler import compile_with_context, create_context
from tl_jit.eager_binding import EagerBinder, KeyBinder, describe
from tl_jit.kernel import JITKernel
from tl_jit.parallel import par_compile, run_parallel, warn_failed
from tl_runtime.fork_safety import fork_waits_for_this

__all__ = ["EagerJITFunction", "par_compile"]  # par_compile: tl_jit.parallel's


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
        self._analysis: Any = None
        self._binding: EagerBinder | None = None
        self._binder: KeyBinder | None = None
        # key -> the kernel's call (its launcher itself where the adapter has one: one
        # call level fewer than going through the JITKernel object)
        self._fast: dict[tuple[Any, ...], Callable[..., Any]] = {}
        self._specializations: dict[tuple[Any, ...], JITKernel] = {}
        functools.update_wrapper(self, func)

    # ------------------------------------------------------------------ analysis
    @property
    def analysis(self) -> Any:
        """The `tl_ir.eager.EagerSignature` of the function (read once, on first use)."""
        if self._analysis is None:
            from tl_ir.eager import analyze

            self._analysis = analyze(self.func)
            self._binding = EagerBinder(self.func, self._analysis)
            self._binder = self._make_binder(self._binding)
        return self._analysis

    def _make_binder(self, binding: EagerBinder) -> KeyBinder | None:
        """Install the generated dispatcher as this object's ``__call__``."""
        made = binding.make_dispatch(self._fast, self._call_slow)
        if made is None:
            return None
        binder, dispatch = made
        # A per-instance subclass makes the generated function this object's __call__
        # (no extra frame between the user's call and the lookup).
        self.__class__ = type(
            "EagerJITFunction",
            (EagerJITFunction,),
            {"__call__": staticmethod(dispatch), "__module__": __name__},
        )
        return binder

    def _bind(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any], *, need_tensors: bool
    ) -> tuple[dict[str, Any], dict[str, int], list[Any]]:
        self.analysis  # noqa: B018 - reading it creates the binder
        assert self._binding is not None
        return self._binding.bind(args, kwargs, need_tensors=need_tensors)

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
        # The first call imports tl_ir.eager and tvm, then compiles: a fork waits for all.
        with fork_waits_for_this():
            if self._analysis is None:
                self.analysis  # noqa: B018 - reading it installs the dispatcher
            return self._call_slow(args, kwargs)

    def _call_slow(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        # Binding and compiling import lazily and hold native locks: a fork waits.
        with fork_waits_for_this():
            templates, consts, arguments = self._bind(args, kwargs, need_tensors=True)
            kernel = self._compile(templates, consts)
        binder = self._binder
        if binder is not None:
            try:
                key, _ = binder(*args, **kwargs)
                self._fast[key] = kernel.__call__
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
                        f"dict or a tuple, got {describe(config)}"
                    )
                # Parsing stays on this thread (the IR builder is per thread); only
                # lowering and building run in the workers.
                specializations.append((templates, consts, self.build_ir(templates, consts)))
            except Exception as exc:
                if not ignore_error:
                    raise
                warn_failed(self.func.__qualname__, exc)
                specializations.append(None)

        def work(item: tuple[dict[str, Any], dict[str, int], Any] | None) -> JITKernel | None:
            if item is None:
                return None
            templates, consts, ir = item
            return self._compile(templates, consts, ir=ir)

        return run_parallel(
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
