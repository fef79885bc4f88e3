"""Run generated CUDA C on the CPU: one OS thread per CUDA thread (tests only).

The CUDA source tl-codegen-cuda emits is compiled with g++ against a small
emulation header: ``threadIdx``/``blockIdx`` are thread-locals,
``__syncthreads`` is a ``std::barrier`` over the block's threads,
``__shfl_sync`` exchanges values through a block-wide table between two
barriers (every thread of the block reaches each shuffle in the generated
code), ``__shared__`` arrays are function statics (blocks run one after
another), and atomics use ``std::atomic_ref``. This checks the numbers the
lowering computes, including its barriers and warp reductions, on a machine
without a GPU; it says nothing about speed. fp16 works through CUDA's own
host-compatible ``cuda_fp16.h`` and vector types (the toolkit's include dir).

The helpers of the backend's ``tl_tensor_core.h`` (mma.sync, ldmatrix, cp.async) are
replaced by the PTX ISA models of ``cuda_emulation_tensor_core.h``, which defines
``TL_CUDA_EMULATION``: warp collectives meet at a per-warp barrier (all 32 lanes must
call), cp.async copies land only at the wait that retires their group. A fault there
(misaligned address, partial warp, a collective some lanes never reach) is raised by
`run_emulated` after the launch. Kernels compile once per process: libraries are kept
by the digest of their text, and the header is precompiled once.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

EMULATION_HEADER = r"""
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
#include <algorithm>
#include <memory>
#include <type_traits>
struct tl_dim3 { unsigned x, y, z; };
static thread_local tl_dim3 threadIdx, blockIdx;
#include <vector_types.h>
#include <vector_functions.h>
static tl_dim3 blockDim, gridDim;
static std::barrier<>* tl_block_barrier = nullptr;
static unsigned long long tl_shuffle_slots[1024];
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
#define __restrict__ __restrict
static inline void __syncthreads() { tl_block_barrier->arrive_and_wait(); }
// bar.sync id, count: the first `count` threads to arrive at barrier `id` wait for each
// other (one block runs at a time, so one set of 16 barriers serves every block).
#include <condition_variable>
#include <mutex>
struct tl_named_barrier_state { std::mutex m; std::condition_variable cv; int arrived = 0; unsigned long long generation = 0; };
static tl_named_barrier_state tl_named_barriers[16];
static inline void tl_named_barrier_sync(int barrier_id, int arrive_count) {
  tl_named_barrier_state& b = tl_named_barriers[barrier_id];
  std::unique_lock<std::mutex> lock(b.m);
  unsigned long long generation = b.generation;
  if (++b.arrived == arrive_count) { b.arrived = 0; ++b.generation; b.cv.notify_all(); return; }
  b.cv.wait(lock, [&] { return b.generation != generation; });
}
static inline unsigned tl_linear_tid() {
  return threadIdx.x + threadIdx.y * blockDim.x + threadIdx.z * blockDim.x * blockDim.y;
}
template <class T> static inline T __shfl_sync(unsigned, T value, int lane, int width) {
  unsigned tid = tl_linear_tid();
  std::memcpy(&tl_shuffle_slots[tid], &value, sizeof(T));
  tl_block_barrier->arrive_and_wait();
  T out;
  unsigned source = (tid / width) * width + (unsigned)(lane % width);
  std::memcpy(&out, &tl_shuffle_slots[source], sizeof(T));
  tl_block_barrier->arrive_and_wait();
  return out;
}
template <class T> static inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width) {
  int lane = (int)(tl_linear_tid() % width);
  int source = lane + (int)delta < width ? lane + (int)delta : lane;
  return __shfl_sync(mask, value, source, width);
}
template <class T> static inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width) {
  int lane = (int)(tl_linear_tid() % width);
  int source = lane - (int)delta >= 0 ? lane - (int)delta : lane;
  return __shfl_sync(mask, value, source, width);
}
template <class T> static inline T atomicAdd(T* address, T value) {
  if constexpr (std::is_arithmetic_v<T>) {
    return std::atomic_ref<T>(*address).fetch_add(value);
  } else {
    // half, half2, bfloat16: a compare-and-swap loop on the bits (std::atomic_ref has
    // fetch_add for arithmetic types only); the sum is the type's own operator+.
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
    using Bits = std::conditional_t<sizeof(T) == 2, unsigned short,
                 std::conditional_t<sizeof(T) == 4, unsigned, unsigned long long>>;
    std::atomic_ref<Bits> bits(*reinterpret_cast<Bits*>(address));
    Bits seen = bits.load();
    for (;;) {
      T old, sum;
      std::memcpy(&old, &seen, sizeof(T));
      sum = old + value;
      Bits desired;
      std::memcpy(&desired, &sum, sizeof(T));
      if (bits.compare_exchange_weak(seen, desired)) return old;
    }
  }
}
// Every lane of a warp is active at each call in the emulation (see
// cuda_emulation_tensor_core.h: warp collectives are reached by all 32 lanes).
static inline unsigned __activemask() { return 0xffffffffu; }
static inline int atomicMax(int* a, int v) {
  std::atomic_ref<int> r(*a); int old = r.load();
  while (old < v && !r.compare_exchange_weak(old, v)) {}
  return old;
}
static inline int atomicMin(int* a, int v) {
  std::atomic_ref<int> r(*a); int old = r.load();
  while (old > v && !r.compare_exchange_weak(old, v)) {}
  return old;
}
// Unsigned and 64-bit max/min and atomicOr (the int max/min above stay exact matches).
template <class T> static inline T atomicMax(T* a, T v) {
  std::atomic_ref<T> r(*a); T old = r.load();
  while (old < v && !r.compare_exchange_weak(old, v)) {}
  return old;
}
template <class T> static inline T atomicMin(T* a, T v) {
  std::atomic_ref<T> r(*a); T old = r.load();
  while (old > v && !r.compare_exchange_weak(old, v)) {}
  return old;
}
template <class T> static inline T atomicOr(T* a, T v) { return std::atomic_ref<T>(*a).fetch_or(v); }
static inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
template <class T> static inline T atomicCAS(T* a, T compare, T value) {
  std::atomic_ref<T>(*a).compare_exchange_strong(compare, value);
  return compare;
}
static inline float __int_as_float(int v) { float f; std::memcpy(&f, &v, 4); return f; }
static inline int __float_as_int(float v) { int i; std::memcpy(&i, &v, 4); return i; }
static inline double __longlong_as_double(unsigned long long v) { double d; std::memcpy(&d, &v, 8); return d; }
static inline unsigned long long __double_as_longlong(double v) { unsigned long long i; std::memcpy(&i, &v, 8); return i; }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
using std::max; using std::min;
// Device max/min of floats are PTX max.f32/min.f32 (fmaxf/fminf): a NaN operand is
// ignored, NaN only when both are; std::max keeps whichever operand its order picks.
static inline float max(float a, float b) { return std::fmax(a, b); }
static inline float min(float a, float b) { return std::fmin(a, b); }
static inline double max(double a, double b) { return std::fmax(a, b); }
static inline double min(double a, double b) { return std::fmin(a, b); }
"""
EMULATION_HEADER += (Path(__file__).resolve().parent / "cuda_emulation_tensor_core.h").read_text()


def check_nvcc_builds(source: str, workdir: Path, arch: str = "sm_80") -> bool:
    """Compile CUDA ``source`` to a cubin for ``arch`` with nvcc in ``workdir`` and
    assert it builds (nvcc's error tail in the message); False, having done nothing,
    where nvcc is not installed."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return False
    path = workdir / "main.cu"
    path.write_text(source)
    done = subprocess.run(
        [nvcc, "-cubin", f"-arch={arch}", "-o", str(workdir / "main.cubin"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return True


def gxx_available() -> bool:
    """Whether g++ (C++20, for std::barrier) and the CUDA headers are at hand."""
    return shutil.which("g++") is not None and _cuda_include() is not None


def _cuda_include() -> str | None:
    for candidate in ("/usr/local/cuda/include", "/usr/include"):
        if Path(candidate, "cuda.h").is_file():
            return candidate
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        include = Path(nvcc).resolve().parent.parent / "include"
        if (include / "cuda.h").is_file():
            return str(include)
    return None


_C_TYPES = {
    "bool": "bool",
    "float16": "half",
    "float32": "float",
    "float64": "double",
    "int8": "signed char",
    "int16": "short",
    "int32": "int",
    "int64": "long long",
    "uint8": "unsigned char",
    "uint16": "unsigned short",
    "uint32": "unsigned",
    "uint64": "unsigned long long",
}


def _launcher(symbol: str, arguments: tuple[Any, ...]) -> str:
    casts = []
    for i, argument in enumerate(arguments):
        if argument.kind in ("workspace", "buffer"):
            # Any element type (bf16, fp8, vectors: TVM may type a workspace as float4*):
            # the pointer converts to whatever the kernel's parameter is.
            casts.append(f"tl_any_ptr{{args[{i}]}}")
            continue
        ctype = _C_TYPES.get(argument.dtype)
        if ctype is None:
            raise NotImplementedError(
                f"emulation: scalar parameter {argument.name!r} has dtype "
                f"{argument.dtype}, which the launcher cannot pass"
            )
        casts.append(f"*({ctype}*)args[{i}]")
    call = f"{symbol}({', '.join(casts)})"
    return f"""
struct tl_any_ptr {{ void* p; template <class T> operator T*() const {{ return (T*)p; }} }};
extern "C" void tl_emulate(void** args, unsigned gx, unsigned gy, unsigned gz,
                           unsigned bx, unsigned by, unsigned bz) {{
  gridDim = {{gx, gy, gz}};
  blockDim = {{bx, by, bz}};
  unsigned threads = bx * by * bz;
  for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y)
  for (unsigned x = 0; x < gx; ++x) {{
    std::barrier<> barrier((std::ptrdiff_t)threads);
    tl_block_barrier = &barrier;
    std::vector<std::unique_ptr<tl_warp_barrier>> warps;  // one per warp, for collectives
    for (unsigned w = 0; w * 32 < threads; ++w) {{
      warps.push_back(std::make_unique<tl_warp_barrier>(min(32u, threads - w * 32)));
      tl_warp_barriers[w] = warps.back().get();
    }}
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {{
      pool.emplace_back([=]() {{
        blockIdx = {{x, y, z}};
        threadIdx = {{t % bx, (t / bx) % by, t / (bx * by)}};
        {call};
      }});
    }}
    for (auto& th : pool) th.join();
  }}
}}
"""


_GXX_FLAGS = ["-std=c++20", "-O1", "-fPIC", "-w", "-pthread"]

# Headers the generated sources include, parsed once into the precompiled prelude (their
# include guards make the sources' own #include lines no-ops).
_PRELUDE_INCLUDES = """
#include <cstdint>
#include <type_traits>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
"""

_PRELUDE_NAME = "tl_emulation_prelude.h"

#: Libraries built in this process, by the digest of their full text.
_LIBRARIES: dict[str, ctypes.CDLL] = {}


@functools.cache
def _precompiled_prelude() -> Path | None:
    """A directory holding `EMULATION_HEADER` (plus the CUDA headers generated code
    includes) as a g++ precompiled header, built once per process; most of a kernel's
    compile time is parsing these. None when g++ cannot precompile it."""
    directory = scratch_dir()
    header = directory / _PRELUDE_NAME
    header.write_text(EMULATION_HEADER + _PRELUDE_INCLUDES)
    command = [
        "g++", *_GXX_FLAGS, f"-I{_cuda_include()}", "-x", "c++-header",
        "-o", f"{header}.gch", str(header),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return directory if done.returncode == 0 else None


def compile_emulation(source: str, launch: Any, workdir: Path) -> ctypes.CDLL:
    """Compile CUDA C plus a launcher of one of its device kernels (``launch``, a
    `tl_backend_api.KernelLaunch` of `KernelSources.launches`) into a host shared
    library (g++ -std=c++20).

    The same text compiles once per process (libraries are kept by its digest); the
    emulation header comes precompiled when g++ allows it."""
    text = re.sub(
        r"extern __shared__ (__align__\(\d+\) )?(\w+) (\w+)\[\];",
        r"alignas(64) static \2 \3[1 << 18];",
        source,
    )
    text = text.replace("__shared__ alignas(64)", "alignas(64) static")
    # C++ wants the alignment before the storage class: `alignas(16) static T x[..]`.
    text = re.sub(r"__shared__ __align__\((\d+)\)", r"alignas(\1) static", text)
    body = text + _launcher(launch.kernel_name, launch.arguments)
    digest = hashlib.sha256((EMULATION_HEADER + body).encode()).hexdigest()[:16]
    if digest in _LIBRARIES:
        return _LIBRARIES[digest]
    cpp = workdir / f"emu_{digest}.cpp"
    lib = workdir / f"emu_{digest}.so"
    prelude = _precompiled_prelude()
    include = [f"-I{_cuda_include()}"]
    if prelude is None:
        cpp.write_text(EMULATION_HEADER + body)
    else:
        cpp.write_text(f'#include "{_PRELUDE_NAME}"\n' + body)
        include.append(f"-I{prelude}")
    command = ["g++", *_GXX_FLAGS, "-shared", *include, "-o", str(lib), str(cpp)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"g++ failed on {cpp}:\n{done.stderr[-3000:]}")
    library = ctypes.CDLL(str(lib))
    _LIBRARIES[digest] = library
    return library


def run_emulated(
    library: ctypes.CDLL,
    launch: Any,
    grid: tuple[int, ...],
    block: tuple[int, ...],
    params: dict[str, Any],
) -> None:
    """Launch the emulated kernel of ``launch`` (what `compile_emulation` built) on host
    arrays/scalars given by name (updated in place). A workspace argument
    (``T.alloc_global``) missing from ``params`` is allocated (its ``nbytes`` evaluated
    for the symbolic dims in ``params``) and added to it, so later kernels of the same
    call see the same memory."""
    from tl_runtime import evaluate_dim_expression

    keep: list[Any] = []
    pointers = (ctypes.c_void_p * len(launch.arguments))()
    for i, argument in enumerate(launch.arguments):
        if argument.kind == "workspace" and argument.name not in params:
            dims = {k: v for k, v in params.items() if isinstance(v, int)}
            nbytes = evaluate_dim_expression(argument.nbytes, dims)
            params[argument.name] = np.zeros(nbytes, np.uint8)
        value = params[argument.name]
        if argument.kind in ("buffer", "workspace"):
            assert isinstance(value, np.ndarray) and value.flags.c_contiguous
            pointers[i] = value.ctypes.data
        else:
            box = np.array([value], dtype=argument.dtype)
            keep.append(box)
            pointers[i] = box.ctypes.data
    g = (*grid, 1, 1, 1)[:3]
    b = (*block, 1, 1, 1)[:3]
    library.tl_emulation_clear_error()
    library.tl_emulate(pointers, *[ctypes.c_uint(v) for v in (*g, *b)])
    library.tl_emulation_error.restype = ctypes.c_char_p
    fault = library.tl_emulation_error()
    if fault is not None:
        raise RuntimeError(f"emulated kernel {launch.kernel_name} faulted: {fault.decode()}")


@functools.cache
def _scratch_root() -> tempfile.TemporaryDirectory[str]:
    # One root per process, removed at exit: the builds are not needed afterwards.
    return tempfile.TemporaryDirectory(prefix="tl-cuda-emu-")


def scratch_dir() -> Path:
    """A fresh temporary directory for emulation builds (under one per-process root
    removed when the process exits)."""
    return Path(tempfile.mkdtemp(dir=_scratch_root().name))


@functools.cache
def _shared_workdir() -> Path:
    return scratch_dir()


def lower_for_cuda(func: Any, name: str = "main", arch: str = "sm_80") -> Any:
    """``func`` through the cuda pipeline and the CUDA codegen: its `KernelSources`
    (``<name>.cu`` and the launches). Runs no compiler."""
    from tvm.target import Target

    from tl_backend_api.artifact import kernel_module
    from tl_codegen_cuda.backend import BACKEND
    from tl_codegen_cuda.codegen import CudaDeviceCodegen

    target = Target({"kind": "cuda", "arch": arch}, host=Target("llvm"))
    mod = BACKEND.pipelines["cuda"].run(kernel_module(func, name), target)
    return CudaDeviceCodegen().emit_source(mod, target)


def emulate(
    func: Any,
    arrays: dict[str, Any],
    *,
    name: str = "main",
    arch: str = "sm_80",
    sources: Any = None,
) -> Any:
    """Lower ``func`` for CUDA and run every device kernel, in launch order, under the
    CPU emulation on host arrays (updated in place) and scalars given by parameter name.

    Symbolic dims are bound from the arrays' shapes. ``sources`` (from `lower_for_cuda`)
    skips the lowering. Returns the `KernelSources` that ran, for inspection.
    """
    from tl_runtime import evaluate_dim_expression

    if sources is None:
        sources = lower_for_cuda(func, name, arch)
    bindings: dict[str, int] = {}
    for param in func.params:
        value = arrays.get(str(param.name))
        for dim, size in zip(getattr(param.ty, "shape", ()), np.shape(value), strict=False):
            if not hasattr(dim, "value"):
                bindings[str(dim.name)] = int(size)
    source = sources.files[f"{name}.cu"]
    workdir = _shared_workdir()
    params: dict[str, Any] = {**arrays, **bindings}
    for launch in sources.launches:
        library = compile_emulation(source, launch, workdir)
        grid = tuple(evaluate_dim_expression(d, bindings) for d in launch.grid)
        block = tuple(evaluate_dim_expression(d, bindings) for d in launch.block)
        run_emulated(library, launch, grid, block, params)
    for key, value in params.items():
        if key in arrays and isinstance(value, np.ndarray):
            arrays[key] = value
    return sources
