# Job: allocating the ``out_idx`` outputs of a call: like the first tensor argument, as a
# tensor of its framework (torch: our aligned memory handed over through the exchange API's
# ``managed_tensor_to_py_object_no_sync`` with a deleter) or as a numpy array carved
# ``alloc_alignment``-aligned out of a byte buffer.

cdef void _free_owned(DLManagedTensorVersioned* managed) noexcept:
    free(managed.manager_ctx)
    free(managed)


cdef DLManagedTensorVersioned* _owned_tensor(ParamInfo* p, int64_t* shape, int64_t nbytes,
                                             uintptr_t alignment) noexcept:
    """A compact host tensor of ``p``'s dtype on fresh ``alignment``-aligned memory."""
    cdef int k
    cdef void* data = NULL
    cdef DLManagedTensorVersioned* managed = <DLManagedTensorVersioned*>malloc(
        sizeof(DLManagedTensorVersioned) + 2 * MAX_DIMS * sizeof(int64_t))
    if managed == NULL:
        return NULL
    if posix_memalign(&data, alignment if alignment >= sizeof(void*) else sizeof(void*),
                      <size_t>(nbytes if nbytes > 0 else 1)) != 0:
        free(managed)
        return NULL
    memset(managed, 0, sizeof(DLManagedTensorVersioned))
    managed.version.major = DLPACK_MAJOR
    managed.version.minor = 0
    managed.manager_ctx = data
    managed.deleter = _free_owned
    managed.flags = 0
    managed.dl_tensor.data = data
    managed.dl_tensor.device.device_type = DLPACK_CPU
    managed.dl_tensor.device.device_id = 0
    managed.dl_tensor.ndim = p.ndim
    managed.dl_tensor.dtype.code = p.code
    managed.dl_tensor.dtype.bits = p.bits
    managed.dl_tensor.dtype.lanes = 1
    managed.dl_tensor.shape = <int64_t*>(<char*>managed + sizeof(DLManagedTensorVersioned))
    managed.dl_tensor.strides = managed.dl_tensor.shape + MAX_DIMS
    cdef int64_t stride = 1
    for k in range(p.ndim - 1, -1, -1):
        managed.dl_tensor.shape[k] = shape[k]
        managed.dl_tensor.strides[k] = stride
        stride *= shape[k]
    managed.dl_tensor.byte_offset = 0
    return managed


cdef int _allocate_output(Launcher launcher, int j, CallState* st, list outputs) except -1:
    """Allocate out_idx parameter ``j`` like the first tensor argument; 0 = declined."""
    cdef ParamInfo* p = &launcher.info[j]
    cdef int i
    cdef int64_t nbytes = p.itemsize
    cdef int64_t stride = 1
    cdef uintptr_t address, offset
    cdef DLManagedTensorVersioned* managed = NULL
    cdef void* py_out = NULL
    cdef const DLPackExchangeAPI* api
    cdef DLTensor* t = &st.tensors[j]
    for i in range(p.ndim - 1, -1, -1):
        st.shapes[j][i] = p.dims[i] if p.dims[i] >= 0 else st.symbols[-p.dims[i] - 1]
        if st.shapes[j][i] <= 0:
            return 0   # zero-size: the slow path makes it
        st.strides[j][i] = stride
        if st.shapes[j][i] > p.max_elements // stride:
            return 0   # beyond the kernel's index width: the slow path refuses it
        stride *= st.shapes[j][i]
    nbytes *= stride
    if st.first_source == EXCHANGE and launcher.follows[st.first_type]:
        api = launcher.apis[st.first_type]
        if api.managed_tensor_to_py_object_no_sync == NULL:
            return 0
        # The memory is ours (aligned like numpy outputs), handed to the framework with a
        # deleter: one wrap, cheaper than the framework's allocator plus its export.
        managed = _owned_tensor(p, st.shapes[j], nbytes, launcher.alloc_alignment)
        if managed == NULL:
            raise MemoryError(f"allocating an output of {nbytes} bytes")
        address = <uintptr_t>managed.dl_tensor.data
        if api.managed_tensor_to_py_object_no_sync(managed, &py_out) != 0 or py_out == NULL:
            PyErr_Clear()   # the framework owns (and frees) what it was given
            return 0
        out = <object>py_out          # a new reference: hand it to Python's ownership
        Py_DECREF(out)
        outputs.append(out)
        if address & p.align_mask:
            return 0   # the slow path says the framework's allocation is misaligned
        _fill(t, &st.packed[j], <void*>address, p, st.shapes[j], st.strides[j])
        return 1
    if st.first_source == EXCHANGE or launcher.np_empty is None or launcher.np_dtypes[j] is None:
        return 0   # another framework's type, no numpy, or a dtype numpy lacks
    raw = launcher.np_empty(nbytes + launcher.alloc_alignment, launcher.np_uint8)
    PyObject_GetBuffer(raw, &st.views[st.nheld], PyBUF_STRIDES | PyBUF_FORMAT)
    address = <uintptr_t>st.views[st.nheld].buf
    PyBuffer_Release(&st.views[st.nheld])
    offset = (-address) & (launcher.alloc_alignment - 1)
    out = raw[offset:offset + nbytes].view(launcher.np_dtypes[j])
    if p.ndim != 1:
        out = out.reshape(tuple([st.shapes[j][i] for i in range(p.ndim)]))
    outputs.append(out)
    _fill(t, &st.packed[j], <void*>(address + offset), p, st.shapes[j], st.strides[j])
    return 1

