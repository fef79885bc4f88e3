# Job: the layout checks every tensor argument goes through, whatever produced it (numpy's
# buffer protocol or torch's DLPack exchange API): extents against static dims and symbols,
# compact or declared strides, the kernel's index width, written arguments overlapping
# others; and filling the DLTensor and packed cell the kernel receives.

cdef inline int _dim_fits(ParamInfo* p, CallState* st, int k, int64_t got) noexcept:
    """Whether extent ``got`` fits dim ``k`` of the param: equal to a static dim, or to
    the symbol's value (bound here on first sight). Zero-size never fits (the slow path
    re-views such arrays)."""
    cdef int64_t want
    if got <= 0:
        return 0
    want = p.dims[k]
    if want >= 0:
        return got == want
    if st.symbols[-want - 1] < 0:
        st.symbols[-want - 1] = got
        return 1
    return st.symbols[-want - 1] == got


cdef int _check_shape(ParamInfo* p, CallState* st, int j, const int64_t* shape,
                     const int64_t* strides, int64_t unit, int strict) noexcept:
    """Check dims against the param (binding symbols) and the layout for compactness.

    ``strides`` are in units of ``unit`` (bytes for buffers, 1 for DLPack) and may be
    NULL (compact). ``strict`` also checks the strides of size-1 dims. Fills the
    compact shape/strides the kernel receives. Returns 1 when fine, 0 to decline.
    """
    cdef int64_t stride = 1
    cdef int64_t got
    cdef int k
    for k in range(p.ndim - 1, -1, -1):
        got = shape[k]
        if not _dim_fits(p, st, k, got):
            return 0
        if strides != NULL and (got != 1 or strict) and strides[k] != stride * unit:
            return 0
        st.shapes[j][k] = got
        st.strides[j][k] = stride
        if got > p.max_elements:
            return 0   # beyond the kernel's index width: the slow path refuses it
        # No wrap: at 32-bit width both factors are below 2**31; at 64, a real
        # array's element count fits int64 (and no division on the fast path).
        stride *= got
        if stride > p.max_elements:
            return 0
    st.spans[j] = stride
    return 1


cdef int _check_strided(ParamInfo* p, CallState* st, int j, const int64_t* shape,
                       const int64_t* strides, int64_t unit) noexcept:
    """Check dims and every stride against the param's declared ones (binding symbols).

    What ``ArgumentChecker`` checks of a param with declared strides: each stride equals
    the declared one (size-1 dims included) and the span from the first to the last
    element addressed fits the kernel's index width. ``strides`` are in units of
    ``unit``; missing (NULL), negative or not a whole number of elements: declined.
    Fills the shape/strides the kernel receives and the span. 1 = fine, 0 = declined.
    """
    cdef int64_t got, want, stride
    cdef int64_t reach = 0   # highest element offset addressed
    cdef int k
    if strides == NULL:
        return 0
    for k in range(p.ndim - 1, -1, -1):
        got = shape[k]
        if not _dim_fits(p, st, k, got):
            return 0
        if strides[k] < 0 or strides[k] % unit:
            return 0
        stride = strides[k] // unit
        want = p.sdims[k]
        if want >= 0:
            if stride != want:
                return 0
        elif st.symbols[-want - 1] < 0:
            st.symbols[-want - 1] = stride
        elif st.symbols[-want - 1] != stride:
            return 0
        if got > p.max_elements:
            return 0   # beyond the kernel's index width: the slow path refuses it
        # reach + (got - 1) * stride + 1 <= max_elements, without overflow
        if stride and got - 1 > (p.max_elements - 1 - reach) // stride:
            return 0
        reach += (got - 1) * stride
        st.shapes[j][k] = got
        st.strides[j][k] = stride
    if reach > 0x0FFFFFFFFFFFFFFF:
        return 0   # its byte range would overflow the overlap check's arithmetic
    if p.written and not _strides_separate(p.ndim, st.shapes[j], st.strides[j]):
        return 0   # elements that may share memory: the slow path decides (and refuses)
    st.spans[j] = reach + 1
    return 1


cdef int _strides_separate(int ndim, const int64_t* shape, const int64_t* strides) noexcept:
    """``tl_runtime.argument_memory.strides_separate``: with the dims of extent > 1 in
    increasing stride order, each stride exceeds the reach of the smaller ones (strides
    here are non-negative). 1 proves that no two elements share memory; 0 may be wrong."""
    cdef int64_t reach
    cdef int a, b
    for a in range(ndim):
        if shape[a] <= 1:
            continue
        reach = 0   # of the dims before this one in stride order (ties: by position)
        for b in range(ndim):
            if b == a or shape[b] <= 1:
                continue
            if strides[b] < strides[a] or (strides[b] == strides[a] and b < a):
                reach += (shape[b] - 1) * strides[b]
        if strides[a] <= reach:
            return 0
    return 1


cdef int _overlapping(Launcher launcher, CallState* st) noexcept:
    """Whether a written caller tensor's byte range meets another caller tensor's."""
    cdef int a, b, i, j
    cdef uintptr_t low_a, high_a, low_b, high_b
    cdef int64_t count
    for a in range(launcher.ncaller):
        i = launcher.caller_index[a]
        if launcher.info[i].kind != TENSOR or not launcher.info[i].written:
            continue
        count = launcher.info[i].itemsize * st.spans[i]
        low_a = <uintptr_t>st.tensors[i].data
        high_a = low_a + <uintptr_t>count
        for b in range(launcher.ncaller):
            j = launcher.caller_index[b]
            if j == i or launcher.info[j].kind != TENSOR:
                continue
            count = launcher.info[j].itemsize * st.spans[j]
            low_b = <uintptr_t>st.tensors[j].data
            high_b = low_b + <uintptr_t>count
            if low_b < high_a and low_a < high_b:
                return 1
    return 0


cdef inline void _fill(DLTensor* t, TVMFFIAny* a, void* data, ParamInfo* p,
                        int64_t* shape, int64_t* strides) noexcept:
    """Point ``t`` at ``data`` with ``p``'s dtype and the given shape/strides (host
    memory, no offset) and make ``a`` the packed cell that passes it."""
    t.data = data
    t.device.device_type = DLPACK_CPU
    t.device.device_id = 0
    t.ndim = p.ndim
    t.dtype.code = p.code
    t.dtype.bits = p.bits
    t.dtype.lanes = 1
    t.shape = shape
    t.strides = strides
    t.byte_offset = 0
    a.type_index = kTVMFFIDLTensorPtr
    a.zero_padding = 0
    a.v_ptr = t

