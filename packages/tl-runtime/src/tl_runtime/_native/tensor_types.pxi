# Job: what the launcher learns once per tensor type that is not a buffer (torch.Tensor): the
# DLPack C exchange API the type publishes (``type(x).__dlpack_c_exchange_api__``), whether
# outputs follow it, and how to ask its instances' ``is_neg`` and ``requires_grad`` on each
# call the cheapest way the type allows (``tl_reader_mode``/``tl_ask``, in C). Remembered in
# the launcher's type table (``_type_slot``), ``MAX_TYPES`` types at most. torch's negative bit
# is read from memory where ``tl_runtime.torch_negative_bit`` found it (two loads, no call).

cdef extern from *:
    """
    /* Per-call questions to a tensor type, asked the cheapest way its type allows.
       A reader is the type's own attribute (looked up once per type), so asking it
       is what ``x.is_neg()`` / ``x.requires_grad`` do, minus the attribute look-up and
       bound-method creation: a C method taking no arguments (torch's ``is_neg``) is
       called through its C function, a data descriptor (torch's ``requires_grad``
       getter) through its ``__get__``, anything else through a plain call. */
    enum { TL_READ_CALL = 0, TL_READ_METHOD = 1, TL_READ_GETTER = 2 };

    static int tl_reader_mode(PyObject* reader, PyObject* kind, int property) {
        if (property) {
            /* A data descriptor on a type with the generic attribute look-up is what
               ``getattr`` returns (it wins over the instance dict). */
            if (Py_TYPE(reader)->tp_descr_get != NULL && Py_TYPE(reader)->tp_descr_set != NULL
                    && ((PyTypeObject*)kind)->tp_getattro == PyObject_GenericGetAttr)
                return TL_READ_GETTER;
            return -1;
        }
        if (Py_IS_TYPE(reader, &PyMethodDescr_Type)
                && PyType_IsSubtype((PyTypeObject*)kind, PyDescr_TYPE(reader))) {
            int flags = ((PyMethodDescrObject*)reader)->d_method->ml_flags;
            if ((flags & (METH_VARARGS | METH_KEYWORDS | METH_NOARGS | METH_O | METH_FASTCALL
                          | METH_METHOD)) == METH_NOARGS)
                return TL_READ_METHOD;
        }
        return TL_READ_CALL;
    }

    /* torch's negative bit read where ``tl_runtime.torch_negative_bit`` found and checked it:
       the TensorImpl pointer at ``object_offset`` of the tensor object, the dispatch key set
       at ``impl_offset`` of the TensorImpl. 1 or 0; -1: the object holds no TensorImpl. */
    static inline int tl_read_negative_bit(PyObject* obj, Py_ssize_t object_offset,
                                           Py_ssize_t impl_offset, uint64_t mask) {
        const char* impl = *(const char* const*)((const char*)obj + object_offset);
        if (impl == NULL)
            return -1;
        return (*(const uint64_t*)(impl + impl_offset) & mask) != 0;
    }

    /* torch's version count moved by one where ``tl_runtime.torch_version_count`` found and
       checked it (what torch's in-place operations do: an atomic add on the counter the
       tensor shares with its views). 0: done, or the tensor has no count (made under
       inference mode); -1: the object holds no TensorImpl (the caller asks torch). */
    static inline int tl_add_to_version_count(PyObject* obj, Py_ssize_t object_offset,
                                              Py_ssize_t impl_offset, Py_ssize_t counter_offset) {
        const char* impl = *(const char* const*)((const char*)obj + object_offset);
        char* counter;
        if (impl == NULL)
            return -1;
        counter = *(char* const*)(impl + impl_offset);
        if (counter != NULL)
            __atomic_fetch_add((uint32_t*)(counter + counter_offset), 1u, __ATOMIC_SEQ_CST);
        return 0;
    }

    /* 1 or 0: the answer's truth; -1: an exception is set. */
    static int tl_ask(PyObject* reader, int mode, PyObject* obj) {
        PyObject* answer;
        int truth;
        if (mode == TL_READ_METHOD)
            answer = ((PyCFunction)(void(*)(void))((PyMethodDescrObject*)reader)->d_method->ml_meth)(obj, NULL);
        else if (mode == TL_READ_GETTER)
            answer = Py_TYPE(reader)->tp_descr_get(reader, obj, (PyObject*)Py_TYPE(obj));
        else
            answer = PyObject_CallOneArg(reader, obj);
        if (answer == NULL)
            return -1;
        truth = answer == Py_True ? 1 : answer == Py_False ? 0 : PyObject_IsTrue(answer);
        Py_DECREF(answer);
        return truth;
    }
    """
    int TL_READ_CALL, TL_READ_METHOD, TL_READ_GETTER
    int tl_reader_mode(object reader, object kind, int property) except -2
    int tl_ask(void* reader, int mode, void* obj) noexcept
    int tl_read_negative_bit(void* obj, Py_ssize_t object_offset, Py_ssize_t impl_offset,
                             uint64_t mask) noexcept
    int tl_add_to_version_count(void* obj, Py_ssize_t object_offset, Py_ssize_t impl_offset,
                                Py_ssize_t counter_offset) noexcept


cdef const DLPackExchangeAPI* _exchange_api(object api_obj):
    """The exchange API a type publishes, or NULL when absent, malformed or of another major."""
    cdef const DLPackExchangeAPI* api = NULL
    if api_obj is None:
        return NULL
    if isinstance(api_obj, int):
        api = <const DLPackExchangeAPI*><uintptr_t>api_obj
    elif PyCapsule_IsValid(api_obj, b"dlpack_exchange_api"):
        api = <const DLPackExchangeAPI*>PyCapsule_GetPointer(api_obj, b"dlpack_exchange_api")
    if api == NULL or api.header.version.major != DLPACK_MAJOR:
        return NULL
    if api.dltensor_from_py_object_no_sync == NULL:
        return NULL
    return api



cdef int _type_slot(Launcher launcher, object obj) except -2:
    """Slot of ``type(obj)`` in the exchange-API table; -1 when it has no usable API."""
    cdef void* tp = Py_TYPE_PTR(obj)
    cdef int i
    for i in range(launcher.ntypes):
        if launcher.types[i] == tp:
            return i
    kind = type(obj)
    if kind in launcher.refused_types or launcher.ntypes == MAX_TYPES:
        return -1
    cdef const DLPackExchangeAPI* api = _exchange_api(
        getattr(kind, "__dlpack_c_exchange_api__", None))
    if api == NULL:
        if len(launcher.refused_types) < MAX_TYPES:
            launcher.refused_types.append(kind)
        return -1
    cdef int follows = 1 if (launcher.outputs_follow is not None and launcher.outputs_follow(kind)) else 0
    # torch's negative bit: a view whose memory holds the values negated (x._neg_view(),
    # z.conj().imag); the DLPack export ignores it, so such tensors go to the slow path.
    # (The conjugate bit exists only on complex tensors, which no dtype code accepts.)
    neg_reader = getattr(kind, "is_neg", None)
    if not callable(neg_reader):
        neg_reader = None
    neg_mode = TL_READ_CALL if neg_reader is None else tl_reader_mode(neg_reader, kind, 0)
    neg_layout = None
    if neg_reader is not None and launcher.negative_bit_layout is not None:
        neg_layout = launcher.negative_bit_layout(kind)   # (object offset, impl offset, mask)
    # the attribute as the type holds it (a getter), not as the class returns it
    grad_reader = next((vars(base)["requires_grad"] for base in kind.__mro__
                        if "requires_grad" in vars(base)), None)
    grad_mode = TL_READ_CALL
    if grad_reader is not None:
        grad_mode = tl_reader_mode(grad_reader, kind, 1)
        if grad_mode < 0:
            grad_reader = None   # not a plain property: asked with getattr per call
    marker = launcher.write_marker(kind) if launcher.write_marker is not None else None
    if marker is not None and not callable(marker):
        marker = None
    version_layout = None
    if marker is not None and launcher.version_count_layout is not None:
        version_layout = launcher.version_count_layout(kind)   # (object, impl, counter offsets)
    # No Python code runs from here on (the GIL stays held): another thread that
    # added this type meanwhile is found, and a slot is filled before it is counted.
    for i in range(launcher.ntypes):
        if launcher.types[i] == tp:
            return i
    if launcher.ntypes == MAX_TYPES:
        return -1
    i = launcher.ntypes
    launcher.type_refs.append((kind, neg_reader, grad_reader, marker))   # keeps them alive
    launcher.neg_readers[i] = <void*>neg_reader if neg_reader is not None else NULL
    launcher.neg_modes[i] = neg_mode
    launcher.neg_masks[i] = 0
    if neg_layout is not None:
        launcher.neg_object_offsets[i] = neg_layout[0]
        launcher.neg_impl_offsets[i] = neg_layout[1]
        launcher.neg_masks[i] = neg_layout[2]
    launcher.grad_readers[i] = <void*>grad_reader if grad_reader is not None else NULL
    launcher.write_markers[i] = <void*>marker if marker is not None else NULL
    launcher.version_known[i] = 0
    if version_layout is not None:
        launcher.version_object_offsets[i] = version_layout[0]
        launcher.version_impl_offsets[i] = version_layout[1]
        launcher.version_counter_offsets[i] = version_layout[2]
        launcher.version_known[i] = 1
    launcher.grad_modes[i] = grad_mode
    launcher.types[i] = tp
    launcher.apis[i] = api
    launcher.follows[i] = follows
    launcher.ntypes += 1
    return i
