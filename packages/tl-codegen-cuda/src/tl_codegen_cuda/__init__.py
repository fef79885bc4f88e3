"""Target backend for the 'cuda' target kind: its descriptor is `tl_codegen_cuda.backend.BACKEND`."""
