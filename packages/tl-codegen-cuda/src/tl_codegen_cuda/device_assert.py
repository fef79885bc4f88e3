"""``T.device_assert`` on CUDA: the device function the shared lowering calls, and its text.

A failing check prints ``message`` (the kernel, the author's text, the source line) with
the block and thread that failed, then raises a device-side assert (``assert``; with
``NDEBUG``, ``__trap()``), as TileLang's ``device_assert_with_msg`` does: the launch
fails and the CUDA context reports it to the host. The codegen adds the definition
only to sources that call it. (The tests' CPU emulation defines TL_CUDA_EMULATION and
its own version, which records the failure.)
"""

from __future__ import annotations

#: The device function `GpuTraits.device_assert` names for CUDA.
CUDA_DEVICE_ASSERT = "tl_device_assert"

#: Its definition (``printf`` and ``assert`` need no include under nvcc or NVRTC).
CUDA_DEVICE_ASSERT_PRELUDE = r"""
#ifndef TL_CUDA_EMULATION
__device__ __noinline__ void tl_device_assert(bool cond, const char* msg) {
  if (!cond) {
    printf("%s (block (%d, %d, %d), thread (%d, %d, %d))\n", msg, (int)blockIdx.x,
           (int)blockIdx.y, (int)blockIdx.z, (int)threadIdx.x, (int)threadIdx.y,
           (int)threadIdx.z);
    assert(0 && "T.device_assert failed");
    __trap();
  }
}
#endif
"""
