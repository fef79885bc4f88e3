"""tl-runtime's CUDA launcher: the ``cuda_driver`` adapter, a plug-in of tl-runtime.

It loads CUDA artifacts (an nvcc-built cubin or fatbin, or CUDA C compiled with NVRTC at
load) and launches every kernel the manifest lists through the CUDA driver API of
cuda-python. tl-runtime finds it through the ``tl.adapters`` entry point ``cuda_driver``;
nothing imports this package by name. It depends on tl-runtime alone; cuda-python is the
optional extra ``cuda-python`` (``pip install 'tl-runtime-cuda[cuda-python]'``), and the
adapter's probe says when it or a GPU is missing.
"""

from __future__ import annotations

from tl_runtime_cuda.adapter import CudaDriverAdapter
from tl_runtime_cuda.driver import CudaError, compile_with_nvrtc, probe_device

__version__ = "0.1.0"

__all__ = ["CudaDriverAdapter", "CudaError", "compile_with_nvrtc", "probe_device"]
