"""Target backend for the 'webgpu' target kind: its descriptor is `tl_codegen_webgpu.backend.BACKEND`."""
