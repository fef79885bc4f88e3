# Job: launching with arguments the Python checker (tl_runtime.checking) already checked
# and normalized, after the fast checks declined (a copy was made, a dtype needs a view,
# the tensor is another framework's DLPack producer): ``Launcher.launch_prepared``.
# Not the fast path: it reads whatever layout it is given and asks nothing.


cdef object _launch_prepared(Launcher launcher, list full_args):
    """Pack ``full_args`` (every parameter, in order) as they are and call the entry."""
    cdef TVMFFIAny packed[MAX_PARAMS]
    cdef DLTensor tensors[MAX_PARAMS]
    cdef Py_buffer views[MAX_PARAMS]
    cdef int64_t shapes[MAX_PARAMS][MAX_DIMS]
    cdef int64_t strides[MAX_PARAMS][MAX_DIMS]
    cdef int nheld = 0
    cdef int j, k, slot
    cdef ParamInfo* p
    cdef DLManagedTensor* managed
    cdef list capsules = []
    if len(full_args) != launcher.nparams:
        raise TypeError(f"launch_prepared: expected {launcher.nparams} args, got {len(full_args)}")
    try:
        for j in range(launcher.nparams):
            p = &launcher.info[j]
            obj = full_args[j]
            if p.kind == SCALAR_INT:
                packed[j].type_index = kTVMFFIInt
                packed[j].zero_padding = 0
                packed[j].v_int64 = <int64_t>obj if obj <= 0x7FFFFFFFFFFFFFFF else <int64_t>(obj - (1 << 64))
            elif p.kind == SCALAR_FLOAT:
                packed[j].type_index = kTVMFFIFloat
                packed[j].zero_padding = 0
                packed[j].v_float64 = <double>obj
            elif p.kind == SCALAR_BOOL:
                packed[j].type_index = kTVMFFIBool
                packed[j].zero_padding = 0
                packed[j].v_int64 = 1 if obj else 0
            elif PyObject_CheckBuffer(obj):
                PyObject_GetBuffer(obj, &views[nheld], PyBUF_STRIDES | PyBUF_FORMAT)
                nheld += 1
                if views[nheld - 1].ndim > MAX_DIMS or views[nheld - 1].itemsize <= 0:
                    raise ValueError(
                        f"parameter {launcher.names[j]!r}: expected at most {MAX_DIMS} dims of "
                        f"whole elements, got {views[nheld - 1].ndim} dims of "
                        f"{views[nheld - 1].itemsize}-byte items")
                for k in range(views[nheld - 1].ndim):
                    shapes[j][k] = views[nheld - 1].shape[k]
                    # Never round a stride: the kernel would read and write between elements.
                    if views[nheld - 1].strides[k] % views[nheld - 1].itemsize:
                        raise ValueError(
                            f"parameter {launcher.names[j]!r}: expected byte strides that are "
                            f"whole multiples of the element size "
                            f"({views[nheld - 1].itemsize} bytes), got byte stride "
                            f"{views[nheld - 1].strides[k]} in dim {k}")
                    strides[j][k] = views[nheld - 1].strides[k] // views[nheld - 1].itemsize
                _fill(&tensors[j], &packed[j], views[nheld - 1].buf, p, shapes[j], strides[j])
            else:
                slot = _type_slot(launcher, obj)
                if slot >= 0 and launcher.apis[slot].dltensor_from_py_object_no_sync(<void*>obj, &tensors[j]) == 0:
                    pass   # a non-owning view; ``full_args`` keeps the tensor alive
                else:
                    PyErr_Clear()
                    capsule = obj.__dlpack__()
                    if not PyCapsule_IsValid(capsule, b"dltensor"):
                        raise TypeError(f"argument {j}: __dlpack__() did not return a 'dltensor' capsule")
                    capsules.append(capsule)
                    managed = <DLManagedTensor*>PyCapsule_GetPointer(capsule, b"dltensor")
                    tensors[j] = managed.dl_tensor
                packed[j].type_index = kTVMFFIDLTensorPtr
                packed[j].zero_padding = 0
                packed[j].v_ptr = &tensors[j]
        _invoke(launcher.fn, launcher.nparams, packed)
    finally:
        for k in range(nheld):
            PyBuffer_Release(&views[k])
    del capsules
