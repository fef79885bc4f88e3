# Job: the fast checks of a tensor argument that exposes the buffer protocol (numpy): its
# format, item size, rank, writability and alignment against the parameter, then its layout
# (layout_checks.pxi). The view it takes is held in the call's ``CallState`` until the call
# ends (``Launcher._release``).


cdef inline int _format_ok(const char* fmt, ParamInfo* p) noexcept:
    if fmt == NULL:
        return 0
    if fmt[0] == b'@' or fmt[0] == b'=' or fmt[0] == b'<':
        fmt += 1
    if fmt[0] == 0 or fmt[1] != 0:
        return 0
    return fmt[0] == p.fmt_a or (p.fmt_b != 0 and fmt[0] == p.fmt_b)


cdef inline int _buffer_argument(ParamInfo* p, CallState* st, int j, object obj) except -1:
    """Check buffer-protocol argument ``obj`` for param ``j`` and fill its packed cell.

    1 = ready; 0 = declined (the slow path reports the precise error or copies).
    """
    cdef Py_buffer* view
    try:
        PyObject_GetBuffer(obj, &st.views[st.nheld], PyBUF_STRIDES | PyBUF_FORMAT)
    except Exception:
        return 0   # the slow path reports the precise error
    view = &st.views[st.nheld]
    st.nheld += 1
    if (not _format_ok(view.format, p)
            or view.itemsize != p.itemsize
            or view.ndim != p.ndim
            or (view.readonly and p.written)
            or (<uintptr_t>view.buf) & p.align_mask):
        return 0
    if p.strided:
        if not _check_strided(p, st, j, <int64_t*>view.shape, <int64_t*>view.strides, p.itemsize):
            return 0
    elif not _check_shape(p, st, j, <int64_t*>view.shape, <int64_t*>view.strides, p.itemsize, 0):
        return 0
    _fill(&st.tensors[j], &st.packed[j], view.buf, p, st.shapes[j], st.strides[j])
    if st.first_source == NO_TENSOR:
        st.first_source = BUFFER
    return 1
