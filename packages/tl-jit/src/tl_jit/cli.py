"""The ``tl`` command line: backends, compile, inspect, cache, bench.

Conventions: errors print ``tl: <message>`` on stderr and exit with status 1 (2 for a
malformed command line, 130 on Ctrl-C); ``--traceback`` anywhere on the line (or
``TL_TRACEBACK=1``) shows the full traceback instead. Output cut short by a closed pipe
(``tl inspect DIR | head``) ends quietly with status 141, as a process killed by SIGPIPE
would. Every command that lists or reports takes ``--json``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import faulthandler
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tl_jit.cli_commands import (
    cmd_backends,
    cmd_cache,
    cmd_compile,
    cmd_inspect,
    json_document_only,
    print_json,
)
from tl_jit.cli_support import UsageError, exits_refused, require_dims, visible
from tl_jit.cli_support import compile_object as _compile_object
from tl_jit.cli_support import parse_assignments as _parse_assignments

__all__ = ["UsageError", "build_parser", "main"]

_TRACEBACK_FLAG = "--traceback"
_SIGPIPE_STATUS = 141  # 128 + SIGPIPE: what a shell reports for a process the pipe killed


def _cmd_bench(args: argparse.Namespace) -> int:
    kernel, consts = _compile_object(args)
    dims = _parse_assignments(args.dim, "--dim")
    require_dims(kernel, dims, consts)
    # A --dim taken as an eager kernel's T.const size is no symbolic dim of the kernel.
    profiler = kernel.get_profiler(dims={k: v for k, v in dims.items() if k not in consts})
    stats = profiler.measure(warmup=args.warmup, rep=args.rep, flops=args.flops, bytes=args.bytes)
    name = args.function.rpartition(":")[2]
    if kernel.name != name.rpartition(".")[2]:
        name = f"{name} ({kernel.name})"
    if args.json:
        import dataclasses

        print_json({"kernel": name, **dataclasses.asdict(stats)})
    else:
        print(stats.summary(name))
    return 0


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    parts = []
    for dist in ("tl-jit", "tl-runtime", "apache-tvm", "apache-tvm-ffi"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    return "tl (" + ", ".join(parts) + ")"


def _work_amount(text: str) -> float:
    """A --flops/--bytes value: a number > 0, or a product of numbers (``2*512**3``)."""
    try:
        value = _arithmetic(ast.parse(text, mode="eval").body)
    except (ValueError, SyntaxError, OverflowError, TypeError):
        value = None
    if value is None or not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number > 0 (e.g. 2*512**3), got {text!r}")
    return float(value)


def _arithmetic(node: ast.expr) -> float:
    """Numbers joined by ``*``, ``**``, ``+``, ``-``, ``/`` (no names, no calls)."""
    if isinstance(node, ast.Constant):
        number = node.value
        if isinstance(number, int | float) and not isinstance(number, bool):
            return float(number)
    if isinstance(node, ast.BinOp):
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Pow) and abs(right) <= 64:
            return float(left**right)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Div) and right:
            return left / right
    raise ValueError("not a number")


def build_parser() -> argparse.ArgumentParser:
    """The ``tl`` argument parser."""
    parser = argparse.ArgumentParser(prog="tl", description="tile-language kernel compiler")
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument(
        _TRACEBACK_FLAG,
        action="store_true",
        help="on an error, show the full traceback (allowed anywhere on the line; "
        "or set TL_TRACEBACK=1)",
    )
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help="what to do (tl COMMAND -h)"
    )

    def json_option(sub: argparse.ArgumentParser, what: str) -> None:
        sub.add_argument("--json", action="store_true", help=f"print {what} as JSON")

    backends_cmd = commands.add_parser(
        "backends", help="list the execution backends: what builds and runs here, what each needs"
    )
    json_option(backends_cmd, "the table")

    def compile_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument(
            "function",
            metavar="FILE:FUNC",
            help="a @jit function (builder or eager kernel), a kernel builder or a PrimFunc",
        )
        sub.add_argument(
            "--target",
            default=None,
            help="c, llvm, cuda, rocm, metal, webgpu, ... (default: the decorator's, else "
            "TL_TARGET, else auto)",
        )
        sub.add_argument(
            "--execution-backend",
            default=None,
            metavar="NAME",
            help="how the artifact runs (tl backends lists them; default: the decorator's, "
            "else TL_EXECUTION_BACKEND, else auto)",
        )
        sub.add_argument(
            "--arg",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a compile-time argument of FUNC (repeatable; VALUE a Python literal or a word)",
        )
        sub.add_argument(
            "--dim",
            action="append",
            default=[],
            metavar="NAME=SIZE",
            help="a size: an eager kernel's T.const (what its tensors' shapes would give); "
            "for bench also a symbolic dim of the inputs it generates (repeatable)",
        )
        sub.add_argument(
            "--out-idx",
            type=int,
            action="append",
            default=None,
            metavar="INDEX",
            help="a parameter the call allocates and returns (repeatable; negative counts "
            "from the end)",
        )

    compile_cmd = commands.add_parser(
        "compile", help="compile a kernel into an artifact directory (for any target, no device)"
    )
    compile_options(compile_cmd)
    compile_cmd.add_argument("--out", required=True, metavar="DIR", help="artifact directory")
    compile_cmd.add_argument(
        "--force", action="store_true", help="replace an artifact already in DIR"
    )
    json_option(compile_cmd, "what was written")

    inspect_cmd = commands.add_parser("inspect", help="show an artifact's manifest and sources")
    inspect_cmd.add_argument("directory", metavar="DIR", help="an artifact directory")
    inspect_cmd.add_argument("--no-source", action="store_true", help="omit the sources")
    json_option(inspect_cmd, "the manifest")

    cache_cmd = commands.add_parser("cache", help="show or clear the disk cache")
    cache_cmd.add_argument(
        "action",
        choices=["info", "clear", "tuning", "clear-tuning"],
        help="info: what it holds; clear: empty it; tuning: list the saved autotuning "
        "results; clear-tuning: remove those results only",
    )
    json_option(cache_cmd, "the report")

    bench_cmd = commands.add_parser(
        "bench", help="compile a kernel and time it (median, spread, throughput)"
    )
    compile_options(bench_cmd)
    bench_cmd.add_argument(
        "--warmup", type=float, default=25.0, help="ms of untimed calls, at least (default 25)"
    )
    bench_cmd.add_argument("--rep", type=float, default=100.0, help="ms of timed calls (100)")
    bench_cmd.add_argument(
        "--flops", type=_work_amount, default=None, help="flops per call: prints FLOP/s"
    )
    bench_cmd.add_argument(
        "--bytes", type=_work_amount, default=None, help="bytes moved per call: prints B/s"
    )
    json_option(bench_cmd, "the statistics and every timed call")
    return parser


_COMMANDS = {
    "backends": cmd_backends,
    "compile": cmd_compile,
    "inspect": cmd_inspect,
    "cache": cmd_cache,
    "bench": _cmd_bench,
}


def _split_traceback_flag(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``argv`` without ``--traceback`` (anywhere before a ``--``), and whether it was there."""
    rest: list[str] = []
    found = False
    for index, item in enumerate(argv):
        if item == "--":
            rest.extend(argv[index:])
            break
        if item == _TRACEBACK_FLAG:
            found = True
        else:
            rest.append(item)
    return rest, found


def _user_frame(exc: BaseException, function: str | None, message: str) -> str | None:
    """``FILE:LINE in NAME`` of the innermost frame in the user's kernel file, unless the
    message already names that file (kernel-language errors do, with the line)."""
    if not function:
        return None
    path_text = function.rpartition(":")[0]
    try:
        wanted = Path(path_text).resolve()
    except OSError:
        return None
    if path_text in message or str(wanted) in message:
        return None
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            if Path(frame.filename).resolve() == wanted:
                found = frame
        except OSError:
            continue
    if found is None:
        return None
    return f"{path_text}:{found.lineno} in {found.name}"


def _report_error(exc: BaseException, args: Any) -> None:
    message = str(exc).strip()
    internal = not message or (
        isinstance(exc, (KeyError, AttributeError, AssertionError))
        and not isinstance(exc, NotImplementedError)  # a named limit, not a bug
    )
    if internal:
        message = f"internal error ({type(exc).__name__}: {message or 'no message'})"
    lines = [visible(line) for line in message.splitlines()]
    print(f"tl: {lines[0]}", file=sys.stderr)
    for line in lines[1:12]:
        print(f"  {line}", file=sys.stderr)
    where = _user_frame(exc, getattr(args, "function", None), message)
    if where is not None:
        print(f"  at {where}", file=sys.stderr)
    if internal:
        print("tl: run it again with --traceback to see where", file=sys.stderr)


def _quiet_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the exit flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tl``; returns the exit status (0 ok, 1 error, 2 usage, 130 interrupted,
    141 output cut by a closed pipe)."""
    argv, show_traceback = _split_traceback_flag(sys.argv[1:] if argv is None else argv)
    from tl_jit import env

    show_traceback = show_traceback or env.traceback_requested()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with contextlib.ExitStack() as scope:
            # A kernel file that crashes the interpreter (a segfault in its own native
            # code) ends the process: say where, instead of exiting 139 with nothing
            # printed (for this command only: an in-process caller keeps its setting).
            if not faulthandler.is_enabled():
                faulthandler.enable()
                scope.callback(faulthandler.disable)
            scope.enter_context(
                exits_refused(
                    f"the kernel code called os._exit({{status}}) before 'tl {args.command}' "
                    "finished"
                )
            )
            if getattr(args, "json", False):
                scope.enter_context(json_document_only())
            status = _COMMANDS[args.command](args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        _quiet_stdout()
        return _SIGPIPE_STATUS
    except KeyboardInterrupt:
        print("tl: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:
        # argparse exits before this try; anything here is user code exiting mid-command,
        # which must not pass for success (the command did not finish).
        if show_traceback:
            raise
        print(
            f"tl: the kernel code called sys.exit({exc.code!r}) before "
            f"'tl {args.command}' finished",
            file=sys.stderr,
        )
        return 1
    except Exception as exc:
        if show_traceback:
            raise
        _report_error(exc, args)
        return 1
    except BaseException as exc:  # kernel code raising a BaseException of its own
        if show_traceback:
            raise
        _report_error(exc, args)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
