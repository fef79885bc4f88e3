"""The ``tl`` command line: backends, compile, inspect, cache, bench.

User errors print one line (``tl: error: ...``) and exit with status 1;
``--traceback`` shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class UsageError(Exception):
    """A command-line mistake (bad FILE:FUNC, bad --arg...)."""


def _parse_assignments(items: Sequence[str], option: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"{option}: expected NAME=VALUE, got {item!r}")
        try:
            values[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values[name] = text  # a bare word such as float16 is a string
    return values


def _load_object(spec: str) -> Any:
    path_text, sep, attribute = spec.rpartition(":")
    if not sep or not path_text or not attribute:
        raise UsageError(f"expected FILE:FUNC (e.g. examples/gemm.py:matmul), got {spec!r}")
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"{path_text}: no such file")
    module_name = f"_tl_cli_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise UsageError(f"{path_text}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    sys.path.insert(0, str(path.resolve().parent))
    try:
        module_spec.loader.exec_module(module)
    except SystemExit as exc:
        # Not a success: nothing was compiled. Report it like any failed import.
        raise UsageError(
            f"{path_text}: importing it called sys.exit({exc.code!r}); a kernel file must "
            "define FUNC without exiting (guard scripts with if __name__ == '__main__')"
        ) from None
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise UsageError(f"{path_text} defines no {attribute!r}")
        value = getattr(value, part)
    return value


def _compile_object(args: argparse.Namespace) -> Any:
    """Compile FILE:FUNC with --arg values and the command's options; returns a JITKernel."""
    from tl_jit.autotuner import AutoTuner
    from tl_jit.compiler import compile as compile_func
    from tl_jit.decorator import JITFunction

    obj = _load_object(args.function)
    arguments = _parse_assignments(args.arg, "--arg")
    overrides: dict[str, Any] = {}
    if args.target is not None:
        overrides["target"] = args.target
    if args.execution_backend is not None:
        overrides["execution_backend"] = args.execution_backend
    if args.out_idx is not None:
        overrides["out_idx"] = args.out_idx
    if isinstance(obj, AutoTuner):
        obj = obj.jit_function
    if isinstance(obj, JITFunction):
        return obj.compile((), arguments, **overrides)
    from tvm.tirx import PrimFunc

    if not isinstance(obj, PrimFunc):
        if not callable(obj):
            raise UsageError(
                f"{args.function}: expected a @jit function, a kernel builder or a PrimFunc"
            )
        obj = obj(**arguments)
        if not isinstance(obj, PrimFunc):
            raise UsageError(f"{args.function}: returned {type(obj).__name__}, not a PrimFunc")
    return compile_func(
        obj,
        out_idx=overrides.get("out_idx"),
        target=overrides.get("target", "auto"),
        execution_backend=overrides.get("execution_backend", "auto"),
    )


def _cmd_backends(args: argparse.Namespace) -> int:
    from tl_backend_api import detect_auto_target_kind, format_backend_report

    print(format_backend_report())
    print(f'\ntarget "auto" here: {detect_auto_target_kind()!r}')
    return 0


def _cmd_compile(args: argparse.Namespace) -> int:
    kernel = _compile_object(args)
    out = kernel.export(args.out)
    print(f"wrote {out} ({kernel.name}, target {kernel.manifest.target.get('kind')})")
    return 0


def _cmd_inspect(args: argparse.Namespace) -> int:
    import tl_runtime

    directory = Path(args.directory)
    manifest = tl_runtime.read_manifest(directory, verify=True)
    if args.json:
        print(json.dumps(manifest.to_json(), indent=2))
        return 0
    print(f"kernel:            {manifest.name} (entry {manifest.entry_symbol})")
    print(f"target:            {json.dumps(dict(manifest.target))}")
    adapter = manifest.adapter or "none: source only, runs with " + (
        ", ".join(manifest.runnable_with) or "no execution backend here"
    )
    print(f"execution backend: {manifest.execution_backend} (adapter {adapter})")
    print("params:")
    for index, param in enumerate(manifest.params):
        role = "output (out_idx)" if index in manifest.out_idx else param.role
        shape = "" if param.kind == "scalar" else str(list(param.shape))
        print(f"  {index}: {param.name:<12} {param.kind:<7} {param.dtype:<9} {shape:<20} {role}")
    if manifest.launches:
        print("launches:")
    for launch in manifest.launches:
        arguments = ", ".join(f"{a.kind} {a.name}" for a in launch.arguments)
        print(
            f"  {launch.symbol}: grid {list(launch.grid)} block {list(launch.block)} "
            f"shared {launch.dynamic_shared_memory} ({arguments})"
        )
    print("files:")
    for entry in manifest.files:
        print(f"  {entry.path:<30} {entry.role:<8} sha256 {entry.sha256[:16]}...")
    print("versions:")
    for name, version in sorted(manifest.versions.items()):
        print(f"  {name}: {version}")
    if not args.no_source:
        for entry in manifest.source_files:
            print(f"\n----- {entry.path} -----")
            print((directory / entry.path).read_text(encoding="utf-8", errors="replace"))
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    from tl_jit import cache

    if args.action == "info":
        print(cache.info().format())
    else:
        removed = cache.clear()
        print(f"removed {removed} kernel entries from {cache.default_cache().root}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    kernel = _compile_object(args)
    dims = _parse_assignments(args.dim, "--dim")
    profiler = kernel.get_profiler(dims=dims)
    stats = profiler.measure(warmup=args.warmup, rep=args.rep, flops=args.flops, bytes=args.bytes)
    name = args.function.rpartition(":")[2]
    if kernel.name != name.rpartition(".")[2]:
        name = f"{name} ({kernel.name})"
    print(stats.summary(name))
    return 0


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
    parser.add_argument("--traceback", action="store_true", help="show tracebacks on errors")
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("backends", help="list registered backends and execution backends")

    def compile_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("function", metavar="FILE:FUNC", help="a @jit function or kernel builder")
        sub.add_argument("--target", default=None, help="target (default TL_TARGET or auto)")
        sub.add_argument("--execution-backend", default=None)
        sub.add_argument(
            "--arg", action="append", default=[], metavar="NAME=VALUE", help="compile-time args"
        )
        sub.add_argument(
            "--out-idx", type=int, action="append", default=None, help="output param index"
        )

    compile_cmd = commands.add_parser("compile", help="compile a kernel into an artifact")
    compile_options(compile_cmd)
    compile_cmd.add_argument("--out", required=True, metavar="DIR", help="artifact directory")

    inspect_cmd = commands.add_parser("inspect", help="show an artifact's manifest and sources")
    inspect_cmd.add_argument("directory", metavar="DIR")
    inspect_cmd.add_argument("--no-source", action="store_true", help="omit the sources")
    inspect_cmd.add_argument("--json", action="store_true", help="print the manifest as JSON")

    cache_cmd = commands.add_parser("cache", help="show or clear the disk cache")
    cache_cmd.add_argument("action", choices=["info", "clear"])

    bench_cmd = commands.add_parser(
        "bench", help="compile a kernel and time it (median, spread, throughput)"
    )
    compile_options(bench_cmd)
    bench_cmd.add_argument(
        "--dim", action="append", default=[], metavar="NAME=SIZE", help="a symbolic dim's size"
    )
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
    return parser


_COMMANDS = {
    "backends": _cmd_backends,
    "compile": _cmd_compile,
    "inspect": _cmd_inspect,
    "cache": _cmd_cache,
    "bench": _cmd_bench,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tl``; returns the exit status (0 ok, 1 error, 2 usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("tl: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exc:
        # argparse exits before this try; anything here is user code exiting mid-command,
        # which must not pass for success (the command did not finish).
        if args.traceback:
            raise
        print(
            f"tl: error: the kernel code called sys.exit({exc.code!r}) before "
            f"'tl {args.command}' finished",
            file=sys.stderr,
        )
        return 1
    except Exception as exc:
        if args.traceback:
            raise
        message = str(exc).strip() or type(exc).__name__
        lines = message.splitlines()
        print(f"tl: error: {type(exc).__name__}: {lines[0]}", file=sys.stderr)
        for line in lines[1:8]:
            print(f"  {line}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
