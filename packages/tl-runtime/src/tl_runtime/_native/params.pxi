# Job: what the launcher knows of each parameter and what one call works in: the limits,
# ``ParamInfo`` (one parameter's checks, read once from its spec dict by ``_read_param``)
# and ``CallState`` (the packed arguments, DLTensors, shapes and bound symbols of one call,
# on the C stack of ``Launcher._run``).

cdef enum:
    MAX_PARAMS = 64
    MAX_DIMS = 8
    MAX_TYPES = 8      # tensor types whose exchange API is remembered per launcher
    DLPACK_CPU = 1
    DLPACK_MAJOR = 1

cdef enum Kind:
    TENSOR = 0
    SCALAR_INT = 1
    SCALAR_FLOAT = 2
    SCALAR_BOOL = 3

cdef enum Source:
    NO_TENSOR = 0
    BUFFER = 1          # buffer protocol (numpy)
    EXCHANGE = 2        # DLPack C exchange API (torch)

cdef struct ParamInfo:
    int kind
    int written          # output/inout the caller passes: read-only, misaligned or (torch)
                         # requiring grad is an error (the slow path says so), never copied
    uintptr_t align_mask # declared alignment - 1: a pointer with these bits set goes slow
    int is_out_idx       # allocated by the launcher
    int caller_pos       # position among the caller's args (params not in out_idx)
    uint8_t code
    uint8_t bits
    char fmt_a           # accepted buffer-format chars ('\0' when none)
    char fmt_b
    int itemsize
    int ndim
    int64_t dims[MAX_DIMS]   # >= 0 static; -(k+1): symbol k
    int strided          # the manifest declares strides (else C-contiguous is required)
    int64_t sdims[MAX_DIMS]  # declared element strides, encoded like ``dims``
    int fast_ok          # 0: always defer to the slow path (odd dtype, device memory)
    int64_t lo
    int64_t hi
    int64_t max_elements # the kernel's index width: more elements go slow (refused there)

cdef struct CallState:
    TVMFFIAny packed[MAX_PARAMS]
    DLTensor tensors[MAX_PARAMS]
    int64_t shapes[MAX_PARAMS][MAX_DIMS]
    int64_t strides[MAX_PARAMS][MAX_DIMS]
    int64_t spans[MAX_PARAMS]    # elements from the first to the last addressed, + 1
    Py_buffer views[MAX_PARAMS]
    int nheld
    int64_t symbols[MAX_PARAMS * MAX_DIMS]
    int first_source             # Source of the first tensor argument (outputs follow it)
    int first_type               # its slot in the launcher's type table (EXCHANGE only)
    int nwritten                 # written exchange-API tensors whose type has a write marker:
    int written_params[MAX_PARAMS]   # their params
    int written_slots[MAX_PARAMS]    # and type slots



cdef int _read_param(ParamInfo* p, object spec) except -1:
    """Fill ``p`` from one spec dict of ``tl_runtime.call_plan.launcher_specs``.

    ``caller_pos`` is left to the caller (it counts the params before it). Raises
    ValueError when the spec has more dims than ``MAX_DIMS`` or strides that do not
    match its dims.
    """
    cdef int k
    memset(p, 0, sizeof(ParamInfo))
    p.kind = spec["kind"]
    p.written = spec["written"]
    p.align_mask = <uintptr_t>(spec["alignment"] - 1)
    p.is_out_idx = spec["is_out_idx"]
    p.code = spec["code"]
    p.bits = spec["bits"]
    fmts = spec["formats"]
    p.fmt_a = ord(fmts[0]) if len(fmts) > 0 else 0
    p.fmt_b = ord(fmts[1]) if len(fmts) > 1 else 0
    p.itemsize = spec["itemsize"]
    dims = spec["dims"]
    if len(dims) > MAX_DIMS:
        raise ValueError(f"Launcher: at most {MAX_DIMS} dims, got {len(dims)}")
    p.ndim = len(dims)
    for k in range(p.ndim):
        p.dims[k] = dims[k]
    declared = spec.get("strides")
    p.strided = declared is not None
    if p.strided:
        if len(declared) != p.ndim:
            raise ValueError(f"Launcher: {len(declared)} strides for {p.ndim} dims")
        for k in range(p.ndim):
            p.sdims[k] = declared[k]
    p.fast_ok = spec["fast_ok"]
    p.lo = spec["lo"]
    p.hi = spec["hi"]
    p.max_elements = spec.get("max_elements", 0x7FFFFFFFFFFFFFFF)
    return 0
