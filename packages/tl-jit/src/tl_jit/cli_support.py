"""What the ``tl`` commands share: reading FILE:FUNC, ``--arg``/``--dim``, and turning
whatever FUNC is (a ``@jit`` builder, an eager ``@jit`` kernel, an autotuned one, a plain
builder or a PrimFunc) into a PrimFunc with its compile options."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class UsageError(Exception):
    """A command-line mistake (bad FILE:FUNC, bad --arg...)."""


# C0/C1 controls (terminal escapes among them) and the bidirectional overrides that
# reorder what a reader sees; an artifact or a file name can carry any of them.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def visible(text: str, keep_lines: bool = False) -> str:
    """``text`` safe to print on a terminal: control characters, terminal escapes and
    bidirectional overrides written as ``\\x1b``/``\\u202e`` escapes; tabs kept, and
    newlines kept only with ``keep_lines`` (else written ``\\n``)."""
    escaped = _INVISIBLE.sub(lambda m: ascii(m.group())[1:-1], text)
    return escaped if keep_lines else escaped.replace("\n", "\\n")


def parse_assignments(items: Sequence[str], option: str) -> dict[str, Any]:
    """``["M=256", "dtype=float16"]`` -> ``{"M": 256, "dtype": "float16"}``: Python
    literals where they parse, else the text when it is a bare word (float16); for
    ``--dim`` every value is a non-negative int.

    Raises:
        UsageError: an item is not NAME=VALUE, a VALUE is neither a literal nor a bare
            word (``2**20``: expressions are not evaluated), a ``--dim`` SIZE is not a
            non-negative int, or a NAME is given twice (which value was meant is not known).
    """
    values: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"{option}: expected NAME=VALUE, got {item!r}")
        if name in values:
            raise UsageError(
                f"{option}: expected each NAME once, got {name} twice ({name}={values[name]!r} "
                f"and {item!r})"
            )
        try:
            values[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            if not _WORD.fullmatch(text):
                raise UsageError(
                    f"{option} {item}: expected VALUE to be a Python literal (1048576, 0.5, "
                    f"'text', (1, 2)) or a bare word (float16), got {text!r}; an expression "
                    "is not evaluated"
                ) from None
            values[name] = text
        if option == "--dim":
            size = values[name]
            if isinstance(size, bool) or not isinstance(size, int) or size < 0:
                raise UsageError(
                    f"--dim {item}: expected SIZE to be a non-negative integer, got "
                    f"{type(size).__name__} {size!r}"
                )
    return values


# What --arg takes as text when it is not a literal: a dtype, a mode, a target name.
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def _kind(path: Path) -> str:
    from tl_runtime.manifest.snapshot import file_kind

    return file_kind(path.stat().st_mode)


def load_object(spec: str) -> Any:
    """Import FILE of ``FILE:FUNC`` and return its FUNC (dotted names allowed).

    Raises:
        UsageError: a malformed spec, a missing file or name, or a file that exits while
            it is imported (``sys.exit`` or ``os._exit``: nothing was compiled).
    """
    path_text, sep, attribute = spec.rpartition(":")
    if not sep or not path_text or not attribute:
        raise UsageError(f"expected FILE:FUNC (e.g. examples/gemm.py:matmul), got {spec!r}")
    path = Path(path_text)
    if not path.exists():
        raise UsageError(f"{path_text}: no such file")
    if not path.is_file():  # a FIFO would block the import, a directory is no module
        raise UsageError(f"{path_text}: expected a Python file, got {_kind(path)}")
    module_name = f"_tl_cli_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"{path_text}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.resolve().parent))
    exit_advice = (
        "a kernel file must define FUNC without exiting (guard scripts with "
        "if __name__ == '__main__')"
    )
    try:
        with exits_refused(f"{path_text}: importing it called os._exit({{status}}); {exit_advice}"):
            module_spec.loader.exec_module(module)
    except SystemExit as exc:
        # Not a success: nothing was compiled. Report it like any failed import.
        raise UsageError(
            f"{path_text}: importing it called sys.exit({exc.code!r}); {exit_advice}"
        ) from None
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UsageError(f"{path_text} defines no {attribute!r}")
        value = getattr(value, part)
    return value


class exits_refused:
    """While kernel code runs for a command, ``os._exit`` raises `UsageError` instead of
    ending the process.

    ``os._exit`` skips every handler, so ``tl compile`` would end with the code's status
    (0) having written nothing. Only this process is affected: a child it forks (a
    multiprocessing worker, which leaves through ``os._exit``) exits as usual.
    """

    def __init__(self, message: str) -> None:
        self.message = message  # formatted with {status}
        self.saved: Any = None

    def __enter__(self) -> None:
        message, owner, saved = self.message, os.getpid(), os._exit
        self.saved = saved

        def refuse(status: int) -> None:
            if os.getpid() != owner:
                saved(status)
            raise UsageError(message.format(status=repr(status)))

        os._exit = refuse  # type: ignore[assignment]

    def __exit__(self, *exc: object) -> None:
        os._exit = self.saved


@dataclass
class ResolvedKernel:
    """FUNC made concrete: the PrimFunc and the options to build it with."""

    prim_func: Any
    options: dict[str, Any] = field(default_factory=dict)
    consts: frozenset[str] = frozenset()  # the --dim names an eager kernel's T.const took


def _missing_dims(obj: Any, given: dict[str, Any]) -> list[str]:
    return [symbol for symbol in obj.analysis.consts if symbol not in given]


def resolve_kernel(args: argparse.Namespace, *, dims_for_eager_only: bool = True) -> ResolvedKernel:
    """The PrimFunc FUNC stands for, with ``--arg``/``--dim`` applied, and its options
    (the decorator's, overridden by ``--target``, ``--execution-backend``, ``--out-idx``).

    ``--dim`` gives an eager kernel's ``T.const`` sizes; for other kernels it is refused
    unless ``dims_for_eager_only`` is False (``tl bench`` binds symbolic dims with it).

    Raises:
        UsageError: FUNC is not a kernel, or an eager kernel's ``T.const`` dim is missing.
        TypeError: the arguments do not fit the function's signature.
    """
    from tl_jit.autotuner import AutoTuner
    from tl_jit.decorator import JITFunction
    from tl_jit.eager import EagerJITFunction

    obj = load_object(args.function)
    arguments = parse_assignments(args.arg, "--arg")
    dims = parse_assignments(getattr(args, "dim", []), "--dim")
    overrides: dict[str, Any] = {}
    if args.target is not None:
        overrides["target"] = args.target
    if args.execution_backend is not None:
        overrides["execution_backend"] = args.execution_backend
    if args.out_idx is not None:
        overrides["out_idx"] = args.out_idx
    both = sorted(set(arguments) & set(dims))
    if both:
        raise UsageError(
            f"{both[0]} is given both as --arg {both[0]}={arguments[both[0]]!r} and as "
            f"--dim {both[0]}={dims[both[0]]!r}; give it once"
        )
    if isinstance(obj, AutoTuner):
        print(
            f"tl: note: {args.function} is autotuned; this builds the configuration its "
            "--arg values and defaults give, without tuning",
            file=sys.stderr,
        )
        obj = obj.jit_function
    if isinstance(obj, EagerJITFunction):
        # Eager kernels: --arg gives template parameters, --dim (or --arg) the T.const
        # sizes their tensors would have given; another --dim (a T.dynamic dim) is for
        # the inputs tl bench makes.
        consts = set(obj.analysis.consts)
        kernel_arguments = sorted({p.name for p in obj.analysis.kernel_params} & set(arguments))
        if kernel_arguments:
            raise UsageError(
                f"--arg {kernel_arguments[0]}: {kernel_arguments[0]!r} is an argument of "
                f"the kernel {args.function} (passed when it is called), not a "
                "compile-time value"
            )
        runtime_dims = sorted(set(dims) - consts)
        if runtime_dims and dims_for_eager_only:
            raise UsageError(
                f"--dim {runtime_dims[0]}: {args.function} has no T.const "
                f"{runtime_dims[0]!r} (its T.const symbols: {sorted(consts)}); a dim "
                "bound at call time (T.dynamic) is given to tl bench, not tl compile"
            )
        values = {**arguments, **{k: v for k, v in dims.items() if k in consts}}
        missing = _missing_dims(obj, values)
        if missing:
            flags = " ".join(f"--dim {name}=SIZE" for name in missing)
            raise UsageError(
                f"{args.function}: an eager kernel takes its sizes from its tensors; give "
                f"them on the command line: {flags}"
            )
        if "out_idx" in overrides:
            raise UsageError(
                f"{args.function}: --out-idx is for kernels returned by a builder; an eager "
                "kernel's outputs are the tensors it creates with T.empty and returns"
            )
        ir = obj.specialize(**values)
        options = {**obj.options, **overrides}
        options["out_idx"] = list(ir.out_idx) or None
        return ResolvedKernel(ir.prim_func, options, frozenset(consts))
    if dims and dims_for_eager_only:
        raise UsageError(
            "--dim: only eager kernels take sizes at compile time; a builder's sizes are "
            "its arguments (--arg NAME=VALUE), symbolic dims are bound when it is called"
        )
    if isinstance(obj, JITFunction):
        return ResolvedKernel(obj.get_prim_func(**arguments), {**obj.options, **overrides})
    from tvm.tirx import PrimFunc

    if isinstance(obj, PrimFunc) and arguments:
        raise UsageError(
            f"--arg {next(iter(arguments))}: {args.function} is a PrimFunc, which takes no "
            "compile-time arguments (its sizes are fixed, or symbolic and bound when called)"
        )
    if not isinstance(obj, PrimFunc):
        if not callable(obj):
            raise UsageError(
                f"{args.function}: expected a @jit function, a kernel builder or a PrimFunc"
            )
        obj = obj(**arguments)
        if not isinstance(obj, PrimFunc):
            raise UsageError(f"{args.function}: returned {type(obj).__name__}, not a PrimFunc")
    return ResolvedKernel(obj, overrides)


def compile_object(args: argparse.Namespace) -> tuple[Any, frozenset[str]]:
    """Compile FILE:FUNC for running here (``tl bench``); returns the `tl_jit.JITKernel`
    and the ``--dim`` names it took as an eager kernel's ``T.const`` sizes.

    Raises:
        everything `resolve_kernel` and `tl_jit.compile` raise.
    """
    from tl_jit.compiler import compile_with_context, create_context

    resolved = resolve_kernel(args, dims_for_eager_only=False)
    options = resolved.options
    context = create_context(
        options.get("target", "auto"),
        options.get("target_host"),
        options.get("execution_backend", "auto"),
    )
    kernel = compile_with_context(
        resolved.prim_func,
        context,
        out_idx=options.get("out_idx"),
        pass_configs=options.get("pass_configs"),
    )
    return kernel, resolved.consts


def require_dims(
    kernel: Any, dims: dict[str, Any], consumed: set[str] | frozenset[str] = frozenset()
) -> None:
    """Refuse, naming the flag, a symbolic dim of ``kernel``'s inputs that ``dims`` lacks,
    and a ``--dim`` that names none (``consumed``: those already used as an eager
    kernel's ``T.const`` sizes).

    Raises:
        UsageError: ``--dim NAME=SIZE`` is missing for some symbolic dim, or names a dim
            the kernel does not have (it would be ignored).
    """
    missing: list[str] = []
    symbolic: set[str] = set()
    for param in kernel.params:
        for dim in getattr(param, "shape", ()) or ():
            if isinstance(dim, str):
                symbolic.add(dim)
            if isinstance(dim, str) and dim not in dims and dim not in missing:
                missing.append(dim)
    unused = sorted(set(dims) - symbolic - set(consumed))
    if unused:
        raise UsageError(
            f"--dim {unused[0]}: kernel {kernel.name!r} has no symbolic dim {unused[0]!r} "
            f"(its symbolic dims: {sorted(symbolic)}); it would be ignored"
        )
    if missing:
        flags = " ".join(f"--dim {name}=SIZE" for name in missing)
        raise UsageError(
            f"kernel {kernel.name!r} has symbolic dims {missing}: give their sizes with {flags}"
        )
