"""CUDA artifacts launched through the CUDA driver API (cuda-python), without apache-tvm.

One adapter, key ``cuda_driver``, for both kinds of CUDA artifact (the CUDA backend's
execution backends ``tvm_ffi`` and ``nvrtc`` both load through it):

* ``manifest.library`` is a ``.cubin`` or ``.fatbin`` built by nvcc: loaded as is;
* ``manifest.library`` is CUDA C (``.cu``): compiled with NVRTC for the
  device's arch when loaded.

It reads ``<name>.kernel.json`` (written by tl-codegen-cuda): the device
symbol and the device parameters in order, each a kernel buffer, a scalar
parameter or a symbolic dim. Grid, block and dynamic shared memory come
from the manifest's launch section, evaluated for the call's dims. A kernel
with consecutive ``T.Kernel`` launches has several device kernels: the
description's ``"kernels"`` list gives each one's symbol, arguments and launch
dims, and a call launches them in that order on one stream (each starts when
the previous one has finished), host arrays copied in once before the first
and back once after the last. A ``"workspace"`` argument (``T.alloc_global``)
is device memory of its ``nbytes`` (evaluated for the call's dims) allocated
for the call and shared by its kernels.

Arguments are CUDA tensors (any DLPack producer on device type CUDA, e.g.
torch): their device pointers are passed as they are. Host arrays (numpy)
are accepted too: each call copies them to the device, launches, waits and
copies every host buffer back (kernels may update inputs in place, e.g.
atomics). Outputs are allocated like the first tensor argument.
It needs the ``cuda-python`` package (``cuda.bindings.driver``) and a
visible NVIDIA GPU; the probes call the driver to check.
"""

from __future__ import annotations

import ctypes
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from tl_runtime.adapters.base import Availability, CallFunction, pack_result
from tl_runtime.checking import ArgumentChecker
from tl_runtime.errors import ArtifactError
from tl_runtime.manifest import LaunchSpec, Manifest, evaluate_dim_expression

_DLPACK_CPU = 1
INSTALL_HINT = "cuda-python (pip install cuda-python) and an NVIDIA GPU with its driver"
#: Above this many bytes of dynamic shared memory a kernel must opt in.
DEFAULT_SHARED_LIMIT = 48 * 1024

_SCALAR_TYPES: dict[str, Any] = {
    "bool": ctypes.c_bool,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


class CudaError(RuntimeError):
    """A CUDA driver or NVRTC call failed (the message names the call and CUDA's error)."""


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except Exception:  # any import failure means "not usable here"
        return None


def driver_module() -> ModuleType | None:
    """cuda-python's driver bindings (``cuda.bindings.driver``, or the older ``cuda.cuda``)."""
    return _import("cuda.bindings.driver") or _import("cuda.cuda")


def nvrtc_module() -> ModuleType | None:
    """cuda-python's NVRTC bindings (``cuda.bindings.nvrtc``, or the older ``cuda.nvrtc``)."""
    return _import("cuda.bindings.nvrtc") or _import("cuda.nvrtc")


def _check(driver: ModuleType, result: Any, call: str) -> Any:
    """Unpack a cuda-python result tuple ``(err, *values)``; raise on an error."""
    values = tuple(result) if isinstance(result, tuple) else (result,)
    err = values[0]
    if int(err) != 0:
        message = ""
        try:
            got = driver.cuGetErrorString(err)
            message = got[1].decode() if int(got[0]) == 0 and got[1] else ""
        except Exception:  # the error string itself is best effort
            message = ""
        raise CudaError(f"{call} failed: {err!r} {message}".strip())
    rest = values[1:]
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else rest


def probe_device() -> Availability:
    """Whether the driver bindings import and the driver reports at least one GPU."""
    driver = driver_module()
    if driver is None:
        return Availability(False, "cuda-python is not installed")
    try:
        _check(driver, driver.cuInit(0), "cuInit")
        count = _check(driver, driver.cuDeviceGetCount(), "cuDeviceGetCount")
    except Exception as exc:
        return Availability(False, f"the CUDA driver is not usable: {exc}")
    if int(count) < 1:
        return Availability(False, "no CUDA device is visible")
    return Availability(True)


class _Device:
    """The primary context of device 0, shared by every kernel of the process."""

    _instance: _Device | None = None

    def __init__(self, driver: ModuleType) -> None:
        self.driver = driver
        _check(driver, driver.cuInit(0), "cuInit")
        self.device = _check(driver, driver.cuDeviceGet(0), "cuDeviceGet")
        self.context = _check(
            driver, driver.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain"
        )
        attribute = driver.CUdevice_attribute
        major = _check(
            driver,
            driver.cuDeviceGetAttribute(
                attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device
            ),
            "cuDeviceGetAttribute",
        )
        minor = _check(
            driver,
            driver.cuDeviceGetAttribute(
                attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device
            ),
            "cuDeviceGetAttribute",
        )
        self.arch = f"sm_{int(major)}{int(minor)}"

    @classmethod
    def get(cls) -> _Device:
        driver = driver_module()
        if driver is None:
            raise CudaError(f"loading a CUDA artifact needs {INSTALL_HINT}")
        if cls._instance is None:
            cls._instance = cls(driver)
        _check(driver, driver.cuCtxSetCurrent(cls._instance.context), "cuCtxSetCurrent")
        return cls._instance


def _kernel_info(manifest: Manifest, directory: Path) -> dict[str, Any]:
    path = directory / f"{manifest.name}.kernel.json"
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ArtifactError(
            f"CUDA artifact: cannot read the kernel description {path.name!r}: {exc}"
        ) from None
    if not isinstance(info, dict) or not isinstance(info.get("arguments"), list):
        raise ArtifactError(f"CUDA artifact: {path.name!r} lacks an 'arguments' list")
    return info


class _DeviceKernel:
    """One device kernel of the artifact: symbol, launch and device arguments (the
    CUDA function handle is filled in when the module is loaded)."""

    def __init__(self, symbol: str, launch: LaunchSpec, arguments: list[Any]) -> None:
        self.symbol = symbol
        self.launch = launch
        self.arguments = arguments
        self.function: Any = None
        self.shared_opt_in = 0


def _device_kernel(entry: Any, index: int) -> _DeviceKernel:
    """A `_DeviceKernel` from one entry of the kernel description's ``"kernels"`` list
    (consecutive ``T.Kernel`` launches, run in list order).

    Raises:
        ArtifactError: the entry lacks its symbol, arguments or launch dims.
    """
    where = f"CUDA artifact: kernel description entry {index} of 'kernels'"
    if not isinstance(entry, dict) or not isinstance(entry.get("symbol"), str):
        raise ArtifactError(f"{where}: expected an object with a 'symbol', got {entry!r}")
    if not isinstance(entry.get("arguments"), list):
        raise ArtifactError(f"{where}: expected an 'arguments' list")
    launch = LaunchSpec(
        grid=tuple(entry.get("grid", [1])),
        block=tuple(entry.get("block", [1])),
        dynamic_shared_memory=entry.get("dynamic_shared_memory", 0),
    )
    return _DeviceKernel(entry["symbol"], launch, entry["arguments"])


def _cuda_include_dirs() -> list[str]:
    """CUDA toolkit include directories for NVRTC (the source includes libcu++ headers)."""
    import os

    found = []
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and Path(root, "include").is_dir():
            found.append(str(Path(root, "include")))
            # CUDA 13 keeps libcu++ (cuda/std/...) under include/cccl.
            if Path(root, "include", "cccl").is_dir():
                found.append(str(Path(root, "include", "cccl")))
    return list(dict.fromkeys(found))


def compile_with_nvrtc(source: bytes, name: str, arch: str) -> bytes:
    """Compile CUDA C ``source`` with NVRTC for ``arch`` (``sm_90``) and return the cubin.

    Needs no GPU, only cuda-python's NVRTC bindings and libnvrtc.

    Raises:
        CudaError: NVRTC is not installed, or it failed (its log in the message).
    """
    nvrtc = nvrtc_module()
    if nvrtc is None:
        raise CudaError(
            f"{name} is CUDA C compiled at load time: install cuda-python with its NVRTC "
            "bindings (pip install cuda-python)"
        )
    program = _check(
        nvrtc, nvrtc.nvrtcCreateProgram(source, name.encode(), 0, [], []), "nvrtcCreateProgram"
    )
    options = [f"--gpu-architecture={arch}".encode(), b"-default-device"]
    options += [f"--include-path={d}".encode() for d in _cuda_include_dirs()]
    result = nvrtc.nvrtcCompileProgram(program, len(options), options)
    if int(result[0]) != 0:
        size = _check(nvrtc, nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
        log = b" " * int(size)
        _check(nvrtc, nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
        raise CudaError(f"NVRTC failed to compile {name}:\n{log.decode(errors='replace')}")
    size = _check(nvrtc, nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
    image = b" " * int(size)
    _check(nvrtc, nvrtc.nvrtcGetCUBIN(program, image), "nvrtcGetCUBIN")
    return image


class CudaDriverAdapter:
    """Loads the artifact's cubin (or CUDA C, through NVRTC) with the CUDA driver and
    launches its kernel.

    Raises (constructor):
        ArtifactError: the artifact lacks launch metadata or its kernel description.
        CudaError: the driver refused the module or the kernel symbol.
    """

    key = "cuda_driver"

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None:
        self.manifest = manifest
        # Host arrays are accepted as well as CUDA tensors (copied in and out).
        self.checker = ArgumentChecker(manifest, (_DLPACK_CPU, *checker.device_types))
        if manifest.launch is None:
            raise ArtifactError("CUDA artifact: the manifest has no launch section")
        self.info = _kernel_info(manifest, directory)
        self.device = _Device.get()
        image = self._image(directory)
        driver = self.device.driver
        self.module = _check(driver, driver.cuModuleLoadData(image), "cuModuleLoadData")
        symbol = str(self.info.get("symbol") or manifest.entry_symbol)
        entries = self.info.get("kernels")
        if entries is None:
            self.kernels = [_DeviceKernel(symbol, manifest.launch, self.info["arguments"])]
        else:
            self.kernels = [_device_kernel(entry, index) for index, entry in enumerate(entries)]
        for kernel in self.kernels:
            kernel.function = _check(
                driver,
                driver.cuModuleGetFunction(self.module, kernel.symbol.encode()),
                f"cuModuleGetFunction({kernel.symbol})",
            )
        self.function = self.kernels[0].function

    def _image(self, directory: Path) -> bytes:
        path = directory / self.manifest.library
        if path.suffix == ".cu":
            return self._compile_with_nvrtc(path)
        return path.read_bytes()  # a cubin or fatbin image

    def _compile_with_nvrtc(self, path: Path) -> bytes:
        return compile_with_nvrtc(path.read_bytes(), path.name, self.device.arch)

    @classmethod
    def probe(cls) -> Availability:
        """Available with cuda-python and a visible GPU (the driver is asked)."""
        return probe_device()

    def _prepare_shared(self, kernel: _DeviceKernel, size: int) -> None:
        if size <= DEFAULT_SHARED_LIMIT or size <= kernel.shared_opt_in:
            return
        driver = self.device.driver
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        _check(
            driver,
            driver.cuFuncSetAttribute(kernel.function, attribute, size),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
        )
        kernel.shared_opt_in = size

    def call_checked(self, args: tuple[Any, ...]) -> Any:
        """Check the arguments, copy buffers in, launch each kernel in order, wait, copy
        buffers back."""
        prepared = self.checker.prepare(args)
        driver = self.device.driver
        _check(driver, driver.cuCtxSetCurrent(self.device.context), "cuCtxSetCurrent")
        index_of = {spec.name: i for i, spec in enumerate(self.manifest.params)}
        # Host arrays get one device copy for the whole call, shared by every kernel.
        device_copies: dict[str, Any] = {}
        allocations: list[tuple[Any, int, int]] = []

        def buffer_pointer(name: str) -> tuple[Any, Any]:
            if name in device_copies:
                return device_copies[name], None
            array = prepared.args[index_of[name]]
            spec = self.manifest.params[index_of[name]]
            view = self.checker.tensor_view(spec, array)
            if view.device_type != _DLPACK_CPU:
                return view.data_ptr, ctypes.c_void_p
            nbytes = max(int(array.nbytes), 1)
            pointer = _check(driver, driver.cuMemAlloc(nbytes), "cuMemAlloc")
            allocations.append((pointer, view.data_ptr, int(array.nbytes)))
            if array.nbytes:
                _check(
                    driver,
                    driver.cuMemcpyHtoD(pointer, view.data_ptr, array.nbytes),
                    "cuMemcpyHtoD",
                )
            device_copies[name] = pointer
            return pointer, None

        def workspace_pointer(name: str, argument: dict[str, Any]) -> Any:
            # T.alloc_global: device memory for this call, shared by its kernels.
            key = f"workspace:{name}"
            if key not in device_copies:
                nbytes = evaluate_dim_expression(argument["nbytes"], prepared.bindings)
                pointer = _check(driver, driver.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc")
                allocations.append((pointer, 0, 0))
                device_copies[key] = pointer
            return device_copies[key]

        try:
            for kernel in self.kernels:
                grid, block, shared = kernel.launch.resolve(prepared.bindings)
                grid3 = (*grid, 1, 1, 1)[:3]
                block3 = (*block, 1, 1, 1)[:3]
                self._prepare_shared(kernel, shared)
                values: list[Any] = []
                types: list[Any] = []
                for argument in kernel.arguments:
                    kind, name = argument["kind"], argument["name"]
                    if kind == "buffer":
                        pointer, pointer_type = buffer_pointer(name)
                        values.append(pointer)
                        types.append(pointer_type)
                    elif kind == "workspace":
                        values.append(workspace_pointer(name, argument))
                        types.append(None)
                    elif kind == "scalar":
                        values.append(prepared.args[index_of[name]])
                        types.append(_SCALAR_TYPES[str(argument["dtype"])])
                    else:
                        values.append(prepared.bindings[name])
                        types.append(_SCALAR_TYPES[str(argument.get("dtype", "int32"))])
                _check(
                    driver,
                    driver.cuLaunchKernel(
                        kernel.function,
                        *grid3,
                        *block3,
                        shared,
                        0,
                        (tuple(values), tuple(types)),
                        0,
                    ),
                    f"cuLaunchKernel({kernel.symbol})",
                )
            _check(driver, driver.cuCtxSynchronize(), "cuCtxSynchronize")
            for pointer, host, nbytes in allocations:
                if nbytes:
                    _check(
                        driver,
                        driver.cuMemcpyDtoH(host, pointer, nbytes),
                        "cuMemcpyDtoH",
                    )
        finally:
            for pointer, _host, _nbytes in allocations:
                driver.cuMemFree(pointer)
        return pack_result(prepared.outputs)

    def make_call(self) -> CallFunction:
        """The call path (every call takes the complete, checked path)."""
        return lambda *args: self.call_checked(args)
