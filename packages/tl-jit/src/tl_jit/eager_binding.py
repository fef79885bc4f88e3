"""Binding an eager call: template arguments, ``T.const`` values and the kernel's
arguments from ``(args, kwargs)``, and the generated dispatcher that does the same for
a call seen before with one tuple build and one dictionary lookup."""

from __future__ import annotations

import ast
import inspect
import operator
import types
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from tl_jit.eager_arguments import array_dims, describe, stride_in_elements

__all__ = ["EagerBinder", "KeyBinder"]

Dispatch = Callable[..., Any]
KeyBinder = Callable[..., tuple[tuple[Any, ...], tuple[Any, ...]]]


def _is_dtype_annotation(annotation: object) -> bool:
    if isinstance(annotation, str):
        return annotation.endswith("dtype")
    return getattr(annotation, "__name__", None) == "dtype"


_OMITTED: Any = object()


#: Dispatchers compiled per binder, by their check (the oldest dropped beyond this).
_COMPILED_KEPT = 8

#: The constant standing for ``__g_writes`` in a compiled dispatcher (no check spells it).
_WRITES = "\x00tl_jit audited writes"


def _with_constant(code: types.CodeType, value: object) -> types.CodeType:
    """``code`` (nested code included) with the constant `_WRITES` replaced by ``value``."""
    consts = tuple(
        _with_constant(c, value)
        if isinstance(c, types.CodeType)
        else value
        if type(c) is str and c == _WRITES
        else c
        for c in code.co_consts
    )
    return code.replace(co_consts=consts)


def _no_slow_path(*_args: Any) -> Any:
    raise AssertionError("the binder's namespace has no dispatcher")


def _present(given: tuple[tuple[str, Any], ...], extra: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments a dispatcher forwards: those given, and the extra ones."""
    forwarded = {name: value for name, value in given if value is not _OMITTED}
    forwarded.update(extra)
    return forwarded


class EagerBinder:
    """Binds calls of one eager function (its `tl_ir.eager.EagerSignature`)."""

    def __init__(self, func: Callable[..., Any], analysis: Any) -> None:
        self.func = func
        self.analysis = analysis
        self._python_signature = inspect.signature(func)
        self._bindings_by_template: dict[str, dict[str, tuple[str, str, int]]] = {}
        self._source: tuple[str, str, str] | None = None
        self._source_made = False
        self._compiled: dict[str, types.CodeType] = {}  # check -> the dispatcher's module
        self._defaults: list[Any] = []

    def make_binder(self) -> KeyBinder | None:
        """Generate, from the user's signature, the binder ``(key, kernel arguments)`` of
        a call (the key the dispatcher looks up); None when no dispatcher can be
        generated for this signature (positional-only parameters, a ``T.const`` not
        bound from a tensor)."""
        source = self._dispatch_source()
        if source is None:
            return None
        namespace = self._namespace(source, {}, _no_slow_path)
        exec(compile(source[0], f"<eager binder of {self.analysis.qualname}>", "exec"), namespace)
        binder: KeyBinder = namespace["__bind"]
        return binder

    def make_dispatch(
        self,
        fast: Mapping[tuple[Any, ...], Any],
        slow: Callable[..., Any],
        check: tuple[str, Mapping[str, Any]] = ("False", {}),
    ) -> Dispatch | None:
        """Generate the dispatcher installed as the owner's ``__call__``: Python's own
        argument binding, one tuple build and one dictionary lookup in ``fast``, the
        validity check, then the kernel's call; any other call goes to ``slow``.

        Args:
            fast: the binder's key -> the kernel's call.
            slow: ``slow((), kwargs)`` serves a call the dispatcher does not; an argument
                left out is left out of ``kwargs`` (bound with the defaults as they are
                then).
            check: a Python expression and the globals it reads (names starting with
                ``__g``), inlined after the lookup: an entry of ``fast`` is served only
                while it is true (the owner's digest guard, `DigestGuard.expression`);
                an exception it raises means false.

        Returns:
            The dispatcher, or None where `make_binder` gives None.
        """
        source = self._dispatch_source()
        if source is None:
            return None
        _, dispatch_source, name = source
        expression, names = check
        namespace = self._namespace(source, fast, slow)
        namespace.update(names)
        # A guard recomputed over the same reads has the same expression: compiled once.
        # Its count of audited writes (``__g_writes``) is then put in as a constant (a
        # constant compares faster than a global: about 30 ns a call).
        code = self._compiled.get(expression)
        if code is None:
            constant = expression.replace("__g_writes", repr(_WRITES))
            text = dispatch_source.replace("__CHECK__", f"({constant})")
            code = compile(text, f"<eager dispatch of {self.analysis.qualname}>", "exec")
            if len(self._compiled) >= _COMPILED_KEPT:
                self._compiled.pop(next(iter(self._compiled)))
            self._compiled[expression] = code
        if "__g_writes" in names:
            code = _with_constant(code, names["__g_writes"])
        exec(code, namespace)
        dispatch: Dispatch = namespace[name]
        dispatch.__qualname__ = self.analysis.qualname
        return dispatch

    def _namespace(
        self, source: tuple[str, str, str], fast: Mapping[tuple[Any, ...], Any], slow: Any
    ) -> dict[str, Any]:
        defaults = self._defaults
        namespace: dict[str, Any] = {
            "__defaults": defaults,
            "__stride": stride_in_elements,
            "__fast": fast,
            "__slow": slow,
            "__omitted": _OMITTED,
            "__present": _present,
        }
        namespace.update((f"__default{i}", value) for i, value in enumerate(defaults))
        return namespace

    def _dispatch_source(self) -> tuple[str, str, str] | None:
        """The binder's source, the dispatcher's (its check spelled ``__CHECK__``) and
        the dispatcher's name; None where no dispatcher can be generated."""
        if self._source_made:
            return self._source
        analysis = self.analysis
        self._source_made = True
        if analysis.bindings is None or len(analysis.bindings) != len(analysis.consts):
            return None
        parts: list[str] = []
        dispatch_parts: list[str] = []
        resolve: list[str] = []
        forwarded: list[str] = []
        local: dict[str, str] = {}  # parameter -> the dispatcher's local holding its value
        defaults: list[Any] = []
        keyword_only = False
        for parameter in self._python_signature.parameters.values():
            if parameter.kind is parameter.POSITIONAL_ONLY or parameter.name.startswith("__"):
                return None
            if parameter.kind is parameter.KEYWORD_ONLY and not keyword_only:
                parts.append("*")
                dispatch_parts.append("*")
                keyword_only = True
            name = parameter.name
            forwarded.append(f"({name!r}, {name})")
            if parameter.default is parameter.empty:
                parts.append(name)
                dispatch_parts.append(name)
                local[name] = name
            else:
                index = len(defaults)
                parts.append(f"{name}=__defaults[{index}]")
                # The dispatcher forwards an omitted argument as omitted: the slow path
                # binds it with the function's defaults as they are then.
                dispatch_parts.append(f"{name}=__omitted")
                resolve.append(
                    f"    __v{index} = __default{index} if {name} is __omitted else {name}\n"
                )
                local[name] = f"__v{index}"
                defaults.append(parameter.default)
        self._defaults = defaults

        def key_of(names: Mapping[str, str]) -> str:
            # Each template value with its class: 1, 1.0 and True are equal dict keys but
            # may build different kernels (see `exact_key` for what else is kept out);
            # a tuple with its elements' classes, since (1,) == (True,) == (1.0,).
            local = [names.get(p, p) for p in analysis.template_params]
            items = [
                f"{v}, ({v}.__class__ if {v}.__class__ is not tuple else tuple(map(type, {v})))"
                for v in local
            ]
            for binding in analysis.bindings:
                value = names.get(binding.param, binding.param)
                if binding.where == "shape":
                    items.append(f"{value}.shape[{binding.axis}]")
                else:
                    items.append(f"__stride({value}, {binding.axis})")
            return "(" + "".join(k + ", " for k in items) + ")"

        def arguments_of(names: Mapping[str, str]) -> str:
            return ", ".join(names.get(p.name, p.name) for p in analysis.kernel_params)

        same = {name: name for name in local}
        arguments = arguments_of(same)
        name = analysis.name
        binder = (
            f"def __bind({', '.join(parts)}):\n"
            f"    return {key_of(same)}, ({arguments}{',' if arguments else ''})\n"
        )
        dispatch = (
            f"def {name}({', '.join([*dispatch_parts, '**__extra'])}):\n"
            f"{''.join(resolve)}"
            f"    try:\n"
            f"        __kernel = __fast[{key_of(local)}]\n"
            f"        __valid = __CHECK__\n"
            f"    except Exception:\n"
            f"        __valid = False\n"
            f"    if __valid and not __extra:\n"
            f"        return __kernel({arguments_of(local)})\n"
            f"    return __slow((), __present(({''.join(f + ', ' for f in forwarded)}), __extra))\n"
        )
        self._source = (binder, dispatch, name)
        return self._source

    # ------------------------------------------------------------------ binding
    def bind(
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
            try:
                found = array_dims(value)
            except (BufferError, TypeError, ValueError, RuntimeError) as exc:
                raise TypeError(
                    f"{qualname}: parameter {param.name!r}: expected an array that exports "
                    f"its memory through DLPack, got {describe(value)} that cannot "
                    f"({type(exc).__name__}: {exc})"
                ) from None
            if found is None:
                if need_tensors:
                    raise TypeError(
                        f"{qualname}: parameter {param.name!r}: expected an array (numpy array, "
                        f"torch tensor or any DLPack producer), got {describe(value)}"
                    )
                continue
            dims[param.name] = found
        consts = self._bind_consts(templates, extra, dims)
        return templates, consts, kernel_args

    def _const_bindings(self, templates: Mapping[str, Any]) -> dict[str, tuple[str, str, int]]:
        analysis = self.analysis
        if analysis.bindings is not None:
            return {b.symbol: (b.param, b.where, b.axis) for b in analysis.bindings}
        from tl_ir.eager import evaluate_bindings
        from tl_jit.keys import Unkeyable, canonical_value

        try:
            key = repr(canonical_value(dict(sorted(templates.items()))))
        except Unkeyable:
            # No faithful key: evaluated for these templates alone, never shared.
            return evaluate_bindings(self.func, analysis, templates)
        if key not in self._bindings_by_template:
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
        # A T.const no declared tensor gives (an output's size, or one used only inside
        # expressions) is legal when the call names it: f(a, N=8).
        unbound = [s for s in analysis.consts if s not in bindings and s not in extra]
        if unbound:
            from tl_ir.errors import KernelSyntaxError

            raise KernelSyntaxError(
                f"{qualname}: T.const {unbound[0]!r} is never a dim of a declared tensor shape "
                "or strides by itself (it is unused, only an output's size, or used only "
                f"inside expressions such as {unbound[0]} * 2): give it by keyword "
                f"({unbound[0]}=<int>), use it directly in an input's declaration, or "
                "declare the derived size as its own T.const"
            )
        consts: dict[str, int] = {}
        for symbol in analysis.consts:
            if symbol in extra:
                value = extra[symbol]
                try:  # numpy's integers too (sizes read off shapes often are)
                    size = None if isinstance(value, bool) else operator.index(value)
                except TypeError:
                    size = None
                if size is None or size <= 0:
                    raise TypeError(
                        f"{qualname}: T.const {symbol!r}: expected a positive int, got {value!r}"
                    )
                consts[symbol] = _const_in_range(qualname, symbol, size, f"{symbol}=")
                continue
            param, where, axis = bindings[symbol]
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
            value = int(source[axis])
            if value <= 0 and where == "shape":
                raise ValueError(
                    f"{qualname}: parameter {param!r}: expected a positive size for T.const "
                    f"{symbol!r} (its shape[{axis}]), got shape {list(shape)}; a T.const is "
                    "compiled into the kernel and is never 0: declare a size that may be 0 "
                    "with T.dynamic"
                )
            consts[symbol] = _const_in_range(qualname, symbol, value, f"{param}.{where}[{axis}] = ")
        self._check_agreement(consts, dims, given=extra)
        self._check_sizes(consts)
        return consts

    def _check_sizes(self, consts: Mapping[str, int]) -> None:
        """No compact declared tensor has more elements than the kernel's 32-bit flat index
        reaches (a ``T.StridedTensor``'s index is its strides' business: the runtime checks
        the span a call addresses)."""
        analysis = self.analysis
        variables = {v: s for s, v in analysis.const_variables.items()}
        for param in analysis.kernel_params:
            node = param.shape
            if param.strides is not None or not isinstance(node, ast.List | ast.Tuple):
                continue
            sizes: list[str] = []
            count = 1
            for element in node.elts:
                if isinstance(element, ast.Name) and element.id in variables:
                    value = consts[variables[element.id]]
                    sizes.append(f"{variables[element.id]}={value}")
                elif isinstance(element, ast.Constant) and type(element.value) is int:
                    value = element.value
                    sizes.append(str(value))
                else:
                    break  # an expression or a run-time size: the runtime checks the call
                count *= value
            else:
                if count > CONST_LIMIT:
                    raise ValueError(
                        f"{analysis.qualname}: parameter {param.name!r}: expected at most "
                        f"{CONST_LIMIT} elements (the kernel indexes with 32-bit integers), "
                        f"got shape [{', '.join(sizes)}] = {count} elements"
                    )

    def _check_agreement(
        self,
        consts: Mapping[str, int],
        dims: Mapping[str, tuple[tuple[int, ...], tuple[int, ...]]],
        given: Mapping[str, Any] = MappingProxyType({}),
    ) -> None:
        """Every tensor whose declared shape names a ``T.const`` directly has that size
        (``given``: the T.const values the caller passed by keyword)."""
        analysis = self.analysis
        variables = {v: s for s, v in analysis.const_variables.items()}

        def origin(symbol: str) -> str:
            if symbol in given:
                return f"given as {symbol}={given[symbol]!r}"
            return "bound from an earlier tensor"

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
                                f"{symbol!r} {origin(symbol)}), got {where} {list(actual)}"
                            )

    # ------------------------------------------------------------------ compiling


#: The largest ``T.const`` value: a 32-bit integer in the kernel's index arithmetic.
CONST_LIMIT = 2**31 - 1


def _const_in_range(qualname: str, symbol: str, value: int, source: str) -> int:
    """``value`` for ``T.const`` ``symbol``, or a ValueError naming it and where it came from."""
    if value > CONST_LIMIT:
        raise ValueError(
            f"{qualname}: T.const {symbol!r}: expected at most {CONST_LIMIT} (a T.const is a "
            f"32-bit integer in the kernel), got {source}{value}"
        )
    return value
