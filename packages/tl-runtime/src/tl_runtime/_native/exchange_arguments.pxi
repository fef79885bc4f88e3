# Job: the fast checks of a tensor argument read through its type's DLPack C exchange API
# (torch): a non-owning DLTensor (``dltensor_from_py_object_no_sync``: no ``__dlpack__()``
# call, no capsule), its device, dtype, rank and alignment against the parameter, torch's
# negative bit (asked on every call), its layout (layout_checks.pxi) and, for a written
# parameter, ``requires_grad`` (and the write is told to the framework after the launch).


cdef inline int _exchange_argument(Launcher launcher, ParamInfo* p, CallState* st, int j,
                                   object obj, int check_only) except -1:
    """Check exchange-API argument ``obj`` for param ``j`` and fill its packed cell.

    With ``check_only`` the launcher hands ``obj`` itself (its own strides, not the compact
    ones filled here) to tvm-ffi, so the strides of size-1 dims are checked too.
    1 = ready; 0 = declined (the slow path reports the precise error, copies or refuses).
    """
    cdef int slot, flag
    cdef DLTensor* t
    cdef char* data
    slot = _type_slot(launcher, obj)
    if slot < 0:
        return 0
    t = &st.tensors[j]
    if launcher.apis[slot].dltensor_from_py_object_no_sync(<void*>obj, t) != 0:
        PyErr_Clear()   # e.g. a meta tensor: the slow path says it shortly
        return 0
    if (t.device.device_type != DLPACK_CPU or t.dtype.code != p.code
            or t.dtype.bits != p.bits or t.dtype.lanes != 1 or t.ndim != p.ndim):
        return 0
    if t.data == NULL:
        return 0   # no memory (fake, functional, lazily zero): the slow path says so
    data = (<char*>t.data) + t.byte_offset
    if (<uintptr_t>data) & p.align_mask:
        return 0
    # torch's negative bit (tensor_types.pxi). Read on every call: the bit can flip on the
    # same object over the same memory (``x.data = x._neg_view()``, ``torch._C._set_neg``)
    # with nothing else the export shows changing, so no answer can be kept. From memory
    # where the probe found it; else (or with no TensorImpl held) asked through ``is_neg``.
    flag = 0
    if launcher.neg_masks[slot] != 0:
        flag = tl_read_negative_bit(<void*>obj, launcher.neg_object_offsets[slot],
                                    launcher.neg_impl_offsets[slot], launcher.neg_masks[slot])
    if (flag < 0 or launcher.neg_masks[slot] == 0) and launcher.neg_readers[slot] != NULL:
        flag = tl_ask(launcher.neg_readers[slot], launcher.neg_modes[slot], <void*>obj)
        if flag < 0:
            PyErr_Clear()   # the slow path asks again and reports it
    if flag != 0:
        return 0   # lazily negated (or unknown): the slow path resolves or refuses it
    if p.strided:
        if not _check_strided(p, st, j, t.shape, t.strides, 1):
            return 0
    elif not _check_shape(p, st, j, t.shape, t.strides, 1, check_only):
        return 0
    if p.written:
        if launcher.grad_readers[slot] != NULL:
            flag = tl_ask(launcher.grad_readers[slot], launcher.grad_modes[slot], <void*>obj)
            if flag < 0:
                PyErr_Clear()
        else:
            flag = 1 if getattr(obj, "requires_grad", False) else 0
        if flag != 0:
            return 0   # autograd cannot see the kernel's write: the slow path refuses it
        if launcher.write_markers[slot] != NULL:   # told after the launch (torch's version)
            st.written_params[st.nwritten] = j
            st.written_slots[st.nwritten] = slot
            st.nwritten += 1
    _fill(t, &st.packed[j], data, p, st.shapes[j], st.strides[j])
    if st.first_source == NO_TENSOR:
        st.first_source = EXCHANGE
        st.first_type = slot
    return 1
