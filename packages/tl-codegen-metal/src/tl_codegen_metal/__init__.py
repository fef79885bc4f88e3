"""Target backend for the 'metal' target kind: its descriptor is `tl_codegen_metal.backend.BACKEND`."""
