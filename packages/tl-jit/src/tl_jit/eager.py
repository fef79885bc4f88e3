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
keyed by a binder generated from the signature, valid while the globals, class
attributes and closure values the body reads are unchanged (`tl_jit.digest_guard`). ``T.dynamic`` dims are not part of
the key: they stay symbolic in the one kernel.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tl_jit import env
from tl_jit.by_reference import CopiedAsItself, reduce_by_reference
from tl_jit.compiler import compile_with_context, create_context
from tl_jit.digest_guard import (
    UNMEMOIZED,
    DigestGuard,
    FunctionDigest,
    function_parts,
    same_parts,
)
from tl_jit.eager_arguments import describe, exact_key
from tl_jit.eager_binding import EagerBinder, KeyBinder
from tl_jit.env_reads import EnvReads, freeze, recording, unchanged
from tl_jit.interpreted import interpret_requested
from tl_jit.kernel import JITKernel
from tl_jit.parallel import par_compile, run_parallel, warn_failed
from tl_runtime.fork_safety import fork_waits_for_this

__all__ = ["EagerJITFunction", "par_compile"]  # par_compile: tl_jit.parallel's


#: `functools.partial`, typed loosely: its ``func`` descriptor and ``__setstate__``
#: are used directly (the stubs do not describe them).
_PARTIAL: Any = functools.partial


def _not_initialized(*_args: Any, **_kwargs: Any) -> Any:
    raise RuntimeError("EagerJITFunction: called before __init__ ran")


class EagerJITFunction(functools.partial, CopiedAsItself):  # type: ignore[type-arg]
    """What ``@jit`` returns for an eager function: call it with the tensors (and any
    template arguments) to run the kernel; ``compile``, ``get_tir`` and
    ``par_compile`` build ahead of time.

    A call runs the kernel on these tensors (compiling it for their specialization
    first if needed) and returns the ``T.empty`` outputs in ``return`` order (one
    array, a tuple of them, or None for a kernel that writes its arguments in
    place); it raises TypeError or ValueError when the arguments do not fit the
    declarations (naming the parameter), `tl_ir.TileLangError` when the kernel does
    not build, and everything `tl_jit.compile` raises.

    The object is a `functools.partial` whose function is what a call runs:
    `_first_call` until the first call has read the signature, then the dispatcher
    generated for it (one tuple build and one dictionary lookup in front of the
    kernel's call), installed with partial's own ``__setstate__``. So a call is
    partial's C call into the dispatcher, with no wrapper frame before it.

    Attributes:
        func: the decorated Python function.
        options: the compile options (target, target_host, execution_backend,
            pass_configs, verbose).
    """

    def __new__(cls, func: Callable[..., Any], **_options: Any) -> EagerJITFunction:
        """An object whose call is installed by `__init__`."""
        return super().__new__(cls, _not_initialized)

    def __init__(self, func: Callable[..., Any], **options: Any) -> None:
        if options.get("out_idx") is not None:
            raise ValueError(
                f"{func.__qualname__}: out_idx is for kernels returned by a builder; an "
                "eager kernel's outputs are the tensors it creates with T.empty and returns"
            )
        self._function = func
        self.options = {k: v for k, v in options.items() if k != "out_idx"}
        self._analysis: Any = None
        self._binding: EagerBinder | None = None
        self._binder: KeyBinder | None = None
        # specialization key -> the kernel and the environment variables its body read
        self._specializations: dict[tuple[Any, ...], tuple[JITKernel, EnvReads]] = {}
        # the function's digest as of now (globals, class attributes, closure, defaults
        # its body reads): part of the specialization key
        self._digest = FunctionDigest(func)
        # The installed dispatcher's digest, guard and table (binder key -> the kernel's
        # call: its launcher itself where the adapter has one, one call level fewer than
        # the JITKernel object). The dispatcher is generated with that guard's check
        # inlined and serves the table's entries while it holds; one tuple, so that
        # threads never pair a table with another digest's guard.
        self._fast_state: tuple[str, DigestGuard, dict[tuple[Any, ...], Any]] | None = None
        self._analyzed: tuple[Any, ...] = ()  # the function's code and defaults, analyzed
        self._install_call(self._first_call)
        functools.update_wrapper(self, func)

    @property
    def func(self) -> Callable[..., Any]:
        """The decorated Python function (partial's own ``func`` is the current call)."""
        return self._function

    @property
    def _call(self) -> Callable[..., Any]:
        """What a call runs now: `_first_call` or the generated dispatcher."""
        call: Callable[..., Any] = _PARTIAL.func.__get__(self)
        return call

    def _install_call(self, call: Callable[..., Any]) -> None:
        _PARTIAL.__setstate__(self, (call, (), None, self.__dict__))

    def __reduce__(self) -> Any:
        """Pickled by reference (module and qualified name), as a function is."""
        return reduce_by_reference(self, self.func, "the eager @jit function")

    # ------------------------------------------------------------------ analysis
    @property
    def analysis(self) -> Any:
        """The `tl_ir.eager.EagerSignature` of the function (read once, on first use)."""
        if self._analysis is None:
            from tl_ir.eager import analyze

            self._analyzed = function_parts(self.func)
            self._analysis = analyze(self.func)
            self._binding = EagerBinder(self.func, self._analysis)
            self._binder = self._make_binder(self._binding)
        return self._analysis

    def _forget_analysis(self) -> None:
        """Drop the signature read from the function and the dispatcher made from it."""
        self._analysis = self._binding = self._binder = None
        self._fast_state = None
        self._install_call(self._first_call)

    @property
    def _fast(self) -> dict[tuple[Any, ...], Any]:
        """The installed dispatcher's table (empty before one serves a kernel)."""
        state = self._fast_state
        return {} if state is None else state[2]

    def _make_binder(self, binding: EagerBinder) -> KeyBinder | None:
        """Install the generated dispatcher (serving nothing yet) as this object's
        ``__call__``; the binder of its keys."""
        binder = binding.make_binder()
        dispatch = binding.make_dispatch({}, self._call_slow)
        if binder is None or dispatch is None:
            return None
        # The generated function becomes the call: no extra frame between the user's
        # call and the lookup.
        self._install_call(dispatch)
        return binder

    def _bind(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any], *, need_tensors: bool
    ) -> tuple[dict[str, Any], dict[str, int], list[Any]]:
        if self._analysis is not None and not same_parts(function_parts(self.func), self._analyzed):
            self._forget_analysis()  # code or defaults assigned in place: read them again
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
    ) -> tuple[Any, ...] | None:
        """The in-memory key of a specialization: the function's digest as of now (what
        its body reads: docs/cache.md, "In memory"), the template arguments, the
        ``T.const`` values and the options; None when a template argument has no
        faithful rendering (that call is then never memoized: keying it by ``repr``
        could hand it another value's kernel)."""
        from tl_jit.keys import Unkeyable, canonical_value

        # A dtype object renders as its name (one specialization with the string); a
        # user's str subclass by its class, text and the attributes it holds.
        try:
            rendered = repr(canonical_value(dict(sorted(templates.items()))))
            options = (
                repr(canonical_value(dict(sorted(self._frontend_options(overrides).items()))))
                if overrides
                else ""
            )
        except Unkeyable:
            return None
        digest = self._digest.current()
        if digest == UNMEMOIZED:
            return None
        return digest, rendered, tuple(sorted(consts.items())), options

    def build_ir(self, templates: Mapping[str, Any], consts: Mapping[str, int]) -> Any:
        """The `tl_ir.eager.EagerKernelIR` of one specialization (no compile)."""
        from tl_ir.eager import build_prim_func
        from tl_ir.errors import TileLangError, at_users_line

        try:
            return build_prim_func(self.func, self.analysis, templates, consts)
        except TileLangError as exc:
            # The message names the kernel's file and line; the parser's frames below
            # help no one (TL_TRACEBACK=1 keeps them, as for @T.prim_func kernels).
            raise at_users_line(exc) from exc.__cause__

    def _build_ir_recorded(
        self, templates: Mapping[str, Any], consts: Mapping[str, int]
    ) -> tuple[Any, EnvReads]:
        """`build_ir`, and the environment variables the function's body read."""
        with recording() as reads:
            ir = self.build_ir(templates, consts)
        return ir, freeze(reads)

    def _compile(
        self,
        templates: Mapping[str, Any],
        consts: Mapping[str, int],
        overrides: Mapping[str, Any] | None = None,
        *,
        built: tuple[Any, EnvReads] | None = None,
    ) -> tuple[JITKernel, EnvReads]:
        """The kernel of one specialization and the environment variables its body read
        (memory, then the front-end memo, then a build)."""
        overrides = dict(overrides or {})
        key = self._specialization_key(templates, consts, overrides)
        held = self._specializations.get(key) if key is not None else None
        if held is not None and unchanged(held[1]):
            return held
        from tl_jit import memo
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
        interpreting = interpret_requested()
        if interpreting:  # nothing cached, nothing kept: the interpreter runs the IR as built
            front_key = None
        found = None
        if front_key is not None and not env.cache_disabled():
            found = memo.load(front_key)
        if found is None:
            ir, reads = built if built is not None else self._build_ir_recorded(templates, consts)
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
            found = kernel, reads
            if front_key is not None and not env.cache_disabled():
                memo.store(front_key, kernel, self.func.__qualname__, reads)
        if key is not None and not interpreting:
            self._specializations[key] = found
        return found

    # ------------------------------------------------------------------ calling
    def _first_call(self, *args: Any, **kwargs: Any) -> Any:
        """The call before the signature is read (and the call where no dispatcher
        can be generated): bind, compile if needed, run."""
        # Reading the analysis installs the generated dispatcher as `_call` for the
        # calls after this one. The first call imports tl_ir.eager and tvm, then
        # compiles: a fork waits for all of it.
        with fork_waits_for_this():
            if self._analysis is None:
                self.analysis  # noqa: B018 - reading it installs the dispatcher
            return self._call_slow(args, kwargs)

    def _call_slow(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        # Binding and compiling import lazily and hold native locks: a fork waits.
        with fork_waits_for_this():
            templates, consts, arguments = self._bind(args, kwargs, need_tensors=True)
            kernel, reads = self._compile(templates, consts)
        binder = self._binder
        # The dispatcher's key holds the raw values (and their classes): it may serve
        # this kernel again only where equal raw values cannot build another kernel
        # (`exact_key`), and only for a body that read no environment variable (the
        # dispatcher checks none).
        if binder is not None and not reads:
            self._remember_fast(binder, args, kwargs, kernel)
        return kernel(*arguments)

    def _remember_fast(
        self, binder: KeyBinder, args: tuple[Any, ...], kwargs: Mapping[str, Any], kernel: Any
    ) -> None:
        """Let the dispatcher serve this call's kernel while the function's digest holds."""
        guard, digest = self._digest.current_state()
        binding = self._binding
        if guard.volatile or binding is None:
            return  # the digest must be recomputed on every call: no fast path
        state = self._fast_state
        if state is None or state[1] is not guard:
            # A new guard: a dispatcher with its check inlined (a compile, as rare as a
            # recomputed digest), keeping the table where the digest is the same.
            table = state[2] if state is not None and state[0] == digest else {}
            dispatch = binding.make_dispatch(
                table, self._call_slow, (guard.expression, guard.namespace)
            )
            if dispatch is None:
                return
            state = (digest, guard, table)
            self._fast_state = state
            self._install_call(dispatch)
        try:
            key, _ = binder(*args, **kwargs)
            if exact_key(key):
                state[2][key] = kernel.__call__
        except Exception:
            pass

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
        return self._compile(templates, consts)[0]

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        """The kernel's PrimFunc for these arguments (bound as by `compile`; no compile)."""
        templates, consts, _ = self._bind(args, kwargs, need_tensors=False)
        return self.build_ir(templates, consts).prim_func

    get_prim_func = get_tir

    def specialize(self, *args: Any, **kwargs: Any) -> Any:
        """The `tl_ir.eager.EagerKernelIR` (PrimFunc and ``out_idx``) for these arguments,
        bound as by `compile`, without compiling (``tl compile`` exports it)."""
        templates, consts, _ = self._bind(args, kwargs, need_tensors=False)
        return self.build_ir(templates, consts)

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        """The generated source of the kernel `compile` returns for these arguments."""
        return self.compile(*args, **kwargs).get_kernel_source()

    def par_compile(
        self,
        configs: Iterable[Mapping[str, Any] | tuple[Any, ...]],
        num_workers: int | None = None,
        ignore_error: bool = False,
        executor: Any = None,
    ) -> list[JITKernel | None]:
        """Compile several specializations in parallel, with a progress bar.

        Args:
            configs: each a dict of keyword arguments or a tuple of positional ones, as
                `compile` takes them.
            num_workers: compile threads (default: one per CPU, at most one per config).
            ignore_error: a config that fails gives None (and a warning) instead of raising.
            executor: where to build (``submit(fn, *args) -> Future``): a thread pool, a
                process pool or a `tl_jit.distributed.RayExecutor`. An executor running
                tasks in other processes imports this function there by its module
                and name; each artifact comes back as bytes, is verified and installed
                in the local cache.

        Returns:
            The kernels, in the order of ``configs``.

        Raises:
            TypeError: a config is malformed, or ``executor`` runs tasks elsewhere and
                this function is defined inside another function.
        """
        from tl_jit.parallel import moves_work_elsewhere

        if executor is not None and moves_work_elsewhere(executor):
            return self._par_compile_shipped(list(configs), num_workers, ignore_error, executor)
        Built = tuple[dict[str, Any], dict[str, int], tuple[Any, EnvReads]]
        specializations: list[Built | None] = []
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
                built = self._build_ir_recorded(templates, consts)
                specializations.append((templates, consts, built))
            except Exception as exc:
                if not ignore_error:
                    raise
                warn_failed(self.func.__qualname__, exc)
                specializations.append(None)

        def work(item: Built | None) -> JITKernel | None:
            if item is None:
                return None
            templates, consts, built = item
            return self._compile(templates, consts, built=built)[0]

        return run_parallel(
            work, specializations, num_workers, ignore_error, f"{self.func.__qualname__}", executor
        )

    def _par_compile_shipped(
        self,
        configs: list[Mapping[str, Any] | tuple[Any, ...]],
        num_workers: int | None,
        ignore_error: bool,
        executor: Any,
    ) -> list[JITKernel | None]:
        from tl_jit.tune_tasks import compile_config_task, function_reference, install_artifact

        reference = function_reference(self)
        if reference is None:
            raise TypeError(
                f"{self.func.__qualname__}.par_compile: this function is defined inside "
                "another function, so no worker process can import it; define it at module "
                "level or pass a thread pool as executor"
            )
        payloads: list[tuple[Any, ...]] = []
        for config in configs:
            if isinstance(config, Mapping):
                templates, consts, _ = self._bind((), config, need_tensors=False)
            elif isinstance(config, tuple):
                templates, consts, _ = self._bind(config, {}, need_tensors=False)
            else:
                raise TypeError(
                    f"{self.func.__qualname__}.par_compile: expected each config to be a "
                    f"dict or a tuple, got {describe(config)}"
                )
            plain = {k: str(v) if isinstance(v, str) else v for k, v in templates.items()}
            payloads.append((reference, {**plain, **consts}))

        return run_parallel(
            compile_config_task,
            payloads,
            num_workers,
            ignore_error,
            f"{self.func.__qualname__}",
            _Unpacking(executor),
            finish=install_artifact,
        )

    def __repr__(self) -> str:
        return f"<tl_jit.jit eager {self.func.__qualname__}>"


class _Unpacking:
    """An executor whose ``submit(fn, payload)`` runs ``fn(*payload)`` on another one."""

    def __init__(self, executor: Any) -> None:
        self._executor = executor

    def submit(self, fn: Callable[..., Any], payload: tuple[Any, ...]) -> Any:
        return self._executor.submit(fn, *payload)
