"""The GPU backends' shared kit: device lowering, source assembly and the source test suite.

* `tl_backend_api.gpu.build`: TVM's device lowering and code generation to
  source text, without a device (`build_device_module`).
* `tl_backend_api.gpu.sources`: the `KernelSources` every GPU codegen returns,
  assembled from a device module (`device_kernel_sources`, `emit_single_source`).
* `tl_backend_api.gpu.suite`: the checks a GPU backend's own tests run over
  the repository's kernel suite (`GpuSourceSuite`).
"""
