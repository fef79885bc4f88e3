"""Target backend for the 'rocm' target kind: its descriptor is `tl_codegen_hip.backend.BACKEND`."""
