"""cuda-python's driver and NVRTC bindings, as the launcher uses them.

Nothing here imports cuda-python at module import: `driver_module` and `nvrtc_module`
import the bindings on first use and answer None when they are missing, so the adapter's
probe can say what is absent without failing.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

from tl_runtime import Availability

INSTALL_HINT = (
    "cuda-python (pip install 'tl-runtime-cuda[cuda-python]') and an NVIDIA GPU with its driver"
)
"""What a machine needs to run CUDA artifacts (the adapter's probe and errors say it)."""


class CudaError(RuntimeError):
    """A CUDA driver or NVRTC call failed (the message names the call and CUDA's error)."""


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except Exception:  # any import failure means "not usable here"
        return None


def driver_module() -> ModuleType | None:
    """cuda-python's driver bindings (``cuda.bindings.driver``, or the older ``cuda.cuda``),
    or None when cuda-python is not installed."""
    return _import("cuda.bindings.driver") or _import("cuda.cuda")


def nvrtc_module() -> ModuleType | None:
    """cuda-python's NVRTC bindings (``cuda.bindings.nvrtc``, or the older ``cuda.nvrtc``),
    or None when they are not installed."""
    return _import("cuda.bindings.nvrtc") or _import("cuda.nvrtc")


def check(bindings: ModuleType, result: Any, call: str) -> Any:
    """Unpack a cuda-python result tuple ``(err, *values)``.

    Returns:
        None for no values, the value for one, the tuple of values for several.

    Raises:
        CudaError: ``err`` is not success (names ``call`` and CUDA's error string).
    """
    values = tuple(result) if isinstance(result, tuple) else (result,)
    err = values[0]
    if int(err) != 0:
        message = ""
        try:
            got = bindings.cuGetErrorString(err)
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
        check(driver, driver.cuInit(0), "cuInit")
        count = check(driver, driver.cuDeviceGetCount(), "cuDeviceGetCount")
    except Exception as exc:
        return Availability(False, f"the CUDA driver is not usable: {exc}")
    if int(count) < 1:
        return Availability(False, "no CUDA device is visible")
    return Availability(True)


class Device:
    """The primary context of device 0, shared by every kernel of the process.

    Attributes:
        driver: the driver bindings.
        device: the CUdevice.
        context: its primary context.
        arch: its compute capability as ``sm_XY`` (what NVRTC compiles for).
    """

    _instance: Device | None = None

    def __init__(self, driver: ModuleType) -> None:
        self.driver = driver
        check(driver, driver.cuInit(0), "cuInit")
        self.device = check(driver, driver.cuDeviceGet(0), "cuDeviceGet")
        self.context = check(
            driver, driver.cuDevicePrimaryCtxRetain(self.device), "cuDevicePrimaryCtxRetain"
        )
        attribute = driver.CUdevice_attribute
        major = check(
            driver,
            driver.cuDeviceGetAttribute(
                attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, self.device
            ),
            "cuDeviceGetAttribute",
        )
        minor = check(
            driver,
            driver.cuDeviceGetAttribute(
                attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, self.device
            ),
            "cuDeviceGetAttribute",
        )
        self.arch = f"sm_{int(major)}{int(minor)}"

    @classmethod
    def get(cls) -> Device:
        """The process's device, its context made current on the calling thread.

        Raises:
            CudaError: cuda-python is missing, or the driver refused a call.
        """
        driver = driver_module()
        if driver is None:
            raise CudaError(f"loading a CUDA artifact needs {INSTALL_HINT}")
        if cls._instance is None:
            cls._instance = cls(driver)
        check(driver, driver.cuCtxSetCurrent(cls._instance.context), "cuCtxSetCurrent")
        return cls._instance


def cuda_include_dirs() -> list[str]:
    """CUDA toolkit include directories for NVRTC (the source includes libcu++ headers):
    ``$CUDA_HOME``, ``$CUDA_PATH`` and ``/usr/local/cuda``, each with its ``include/cccl``."""
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
            "bindings (pip install 'tl-runtime-cuda[cuda-python]')"
        )
    program = check(
        nvrtc, nvrtc.nvrtcCreateProgram(source, name.encode(), 0, [], []), "nvrtcCreateProgram"
    )
    options = [f"--gpu-architecture={arch}".encode(), b"-default-device"]
    options += [f"--include-path={d}".encode() for d in cuda_include_dirs()]
    result = nvrtc.nvrtcCompileProgram(program, len(options), options)
    if int(result[0]) != 0:
        size = check(nvrtc, nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
        log = b" " * int(size)
        check(nvrtc, nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
        raise CudaError(f"NVRTC failed to compile {name}:\n{log.decode(errors='replace')}")
    size = check(nvrtc, nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
    image = b" " * int(size)
    check(nvrtc, nvrtc.nvrtcGetCUBIN(program, image), "nvrtcGetCUBIN")
    return image
