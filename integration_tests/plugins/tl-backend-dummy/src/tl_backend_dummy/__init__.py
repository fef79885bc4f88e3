"""A compiler-free test backend for TVM's ``ext_dev`` kind: exercises discovery, override and selection.

Nothing here runs a compiler: "building" packages the generated text, the
way a driver that compiles source at load time would receive it. The plugin
is active only inside the tests (integration_tests/plugins/activation.py).
"""
