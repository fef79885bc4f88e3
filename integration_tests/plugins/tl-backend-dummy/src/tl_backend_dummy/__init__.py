"""A compiler-free test backend for the ``opencl`` kind: exercises discovery, override and selection.

Nothing here runs a compiler: "building" packages the generated text, the
way OpenCL programs ship source that the driver compiles at load time.
"""
