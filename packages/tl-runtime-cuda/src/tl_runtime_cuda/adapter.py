"""The ``cuda_driver`` adapter: CUDA artifacts launched through the CUDA driver API
(cuda-python), without apache-tvm.

One adapter for both kinds of CUDA artifact:

* ``manifest.library`` is a ``.cubin`` or ``.fatbin`` built by nvcc: loaded as is;
* ``manifest.library`` is CUDA C (``.cu``): compiled with NVRTC for the device's arch
  when loaded.

Everything it launches comes from the manifest alone: ``manifest.launches`` lists every
device kernel in launch order (a kernel with consecutive ``T.Kernel`` launches has
several), each with its symbol, its device arguments in order (a tensor parameter's data
pointer, a scalar parameter, a symbolic dim, or a workspace) and its grid, block and
dynamic shared memory, evaluated for the call's dims. A call launches the kernels in
that order on one stream (each starts when the previous one has finished), host arrays
copied in once before the first and back once after the last. A ``workspace`` argument
(``T.alloc_global``) is device memory of its ``nbytes`` allocated for the call and shared
by its kernels.

Arguments are CUDA tensors (any DLPack producer on device type CUDA, e.g. torch): their
device pointers are passed as they are. Host arrays (numpy) are accepted too: each call
copies them to the device, launches, waits and copies every host buffer back (kernels may
update inputs in place, e.g. atomics). Outputs are allocated like the first tensor
argument. It needs cuda-python (``cuda.bindings.driver``) and a visible NVIDIA GPU; the
probe asks the driver.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

from tl_runtime import (
    ArgumentChecker,
    ArtifactError,
    Availability,
    CallFunction,
    LaunchSpec,
    Manifest,
    evaluate_dim_expression,
    pack_result,
)
from tl_runtime_cuda import driver as bindings

_DLPACK_CPU = 1
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
"""The ctypes type each scalar or dim argument is passed as, by dtype."""


class _DeviceKernel:
    """One launch of the artifact (the CUDA function handle is filled in when the module
    is loaded)."""

    def __init__(self, launch: LaunchSpec) -> None:
        self.launch = launch
        self.function: Any = None
        self.shared_opt_in = 0
        for argument in launch.arguments:
            if argument.kind in ("scalar", "dim") and argument.dtype not in _SCALAR_TYPES:
                raise NotImplementedError(
                    f"CUDA launcher: kernel {launch.symbol!r} argument {argument.name!r} is a "
                    f"{argument.dtype} {argument.kind}; the launcher passes scalars of "
                    f"{sorted(_SCALAR_TYPES)} only"
                )


class CudaDriverAdapter:
    """Loads the artifact's cubin (or CUDA C, through NVRTC) with the CUDA driver and
    launches its kernels in ``manifest.launches`` order.

    Raises (constructor):
        ArtifactError: the manifest lists no launch.
        NotImplementedError: a scalar argument of a dtype the launcher cannot pass.
        CudaError: the driver refused the module or a kernel symbol, or NVRTC failed.
    """

    key = "cuda_driver"

    def __init__(self, manifest: Manifest, directory: Path, checker: ArgumentChecker) -> None:
        self.manifest = manifest
        # Host arrays are accepted as well as CUDA tensors (copied in and out).
        self.checker = ArgumentChecker(manifest, (_DLPACK_CPU, *checker.device_types))
        if not manifest.launches:
            raise ArtifactError(
                f"CUDA artifact {manifest.name!r}: the manifest lists no launches "
                "(manifest launches); re-export it with this tl-runtime"
            )
        self.kernels = [_DeviceKernel(launch) for launch in manifest.launches]
        self.device = bindings.Device.get()
        image = self._image(directory)
        driver = self.device.driver
        self.module = bindings.check(driver, driver.cuModuleLoadData(image), "cuModuleLoadData")
        for kernel in self.kernels:
            symbol = kernel.launch.symbol
            kernel.function = bindings.check(
                driver,
                driver.cuModuleGetFunction(self.module, symbol.encode()),
                f"cuModuleGetFunction({symbol})",
            )
        self.function = self.kernels[0].function

    def _image(self, directory: Path) -> bytes:
        path = directory / self.manifest.library
        if path.suffix == ".cu":
            return bindings.compile_with_nvrtc(path.read_bytes(), path.name, self.device.arch)
        return path.read_bytes()  # a cubin or fatbin image

    @classmethod
    def probe(cls) -> Availability:
        """Available with cuda-python and a visible GPU (the driver is asked)."""
        return bindings.probe_device()

    def _prepare_shared(self, kernel: _DeviceKernel, size: int) -> None:
        if size <= DEFAULT_SHARED_LIMIT or size <= kernel.shared_opt_in:
            return
        driver = self.device.driver
        attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        bindings.check(
            driver,
            driver.cuFuncSetAttribute(kernel.function, attribute, size),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
        )
        kernel.shared_opt_in = size

    def call_checked(self, args: tuple[Any, ...]) -> Any:
        """Check the arguments, copy host buffers in, launch each kernel in order, wait,
        copy host buffers back."""
        check = bindings.check
        prepared = self.checker.prepare(args)
        driver = self.device.driver
        check(driver, driver.cuCtxSetCurrent(self.device.context), "cuCtxSetCurrent")
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
            pointer = check(driver, driver.cuMemAlloc(nbytes), "cuMemAlloc")
            allocations.append((pointer, view.data_ptr, int(array.nbytes)))
            if array.nbytes:
                check(
                    driver,
                    driver.cuMemcpyHtoD(pointer, view.data_ptr, array.nbytes),
                    "cuMemcpyHtoD",
                )
            device_copies[name] = pointer
            return pointer, None

        def workspace_pointer(name: str, nbytes_expression: int | str) -> Any:
            # T.alloc_global: device memory for this call, shared by its kernels.
            key = f"workspace:{name}"
            if key not in device_copies:
                nbytes = evaluate_dim_expression(nbytes_expression, prepared.bindings)
                pointer = check(driver, driver.cuMemAlloc(max(nbytes, 1)), "cuMemAlloc")
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
                for argument in kernel.launch.arguments:
                    if argument.kind == "buffer":
                        pointer, pointer_type = buffer_pointer(argument.name)
                        values.append(pointer)
                        types.append(pointer_type)
                    elif argument.kind == "workspace":
                        assert argument.nbytes is not None  # the manifest requires it
                        values.append(workspace_pointer(argument.name, argument.nbytes))
                        types.append(None)
                    elif argument.kind == "scalar":
                        values.append(prepared.args[index_of[argument.name]])
                        types.append(_SCALAR_TYPES[argument.dtype])
                    else:
                        values.append(prepared.bindings[argument.name])
                        types.append(_SCALAR_TYPES[argument.dtype])
                check(
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
                    f"cuLaunchKernel({kernel.launch.symbol})",
                )
            check(driver, driver.cuCtxSynchronize(), "cuCtxSynchronize")
            for pointer, host, nbytes in allocations:
                if nbytes:
                    check(driver, driver.cuMemcpyDtoH(host, pointer, nbytes), "cuMemcpyDtoH")
        finally:
            for pointer, _host, _nbytes in allocations:
                driver.cuMemFree(pointer)
        return pack_result(prepared.outputs)

    def make_call(self) -> CallFunction:
        """The call path (every call takes the complete, checked path)."""
        return lambda *args: self.call_checked(args)
