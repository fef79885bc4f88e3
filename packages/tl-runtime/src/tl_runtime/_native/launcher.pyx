# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""tl-runtime's Cython launcher: checks arguments and calls a kernel's packed C entry directly.

Data pointers come straight from the buffer protocol (numpy) or, for tensors of a framework
that publishes the DLPack C exchange API (``type(x).__dlpack_c_exchange_api__``: torch),
from that API's ``dltensor_from_py_object_no_sync`` (no Python ``__dlpack__()`` call, no
capsule). The packed argument array is built in C and the entry (``int f(void*, const
TVMFFIAny*, int32_t, TVMFFIAny*)``) is called without tvm-ffi's Python marshalling.
Anything the fast checks decline goes to the Python checker (``slow``), which raises the
precise error or returns normalized arguments for ``launch_prepared``.

A ``Launcher`` built with entry address 0 checks, then calls a ``delegate`` (the tvm-ffi
function): the ``tvm_ffi`` adapter's path for non-numpy arguments.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyObject_CheckBuffer, PyBUF_STRIDES, PyBUF_FORMAT
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.ref cimport Py_DECREF
from cpython.exc cimport PyErr_Clear
from libc.stdint cimport int64_t, int32_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free

cdef extern from "stdlib.h":
    int posix_memalign(void** memptr, size_t alignment, size_t size) nogil

cdef extern from "Python.h":
    void* Py_TYPE_PTR "Py_TYPE" (object o)

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

cdef extern from "tvm/ffi/c_api.h":
    ctypedef struct DLDevice:
        int device_type
        int32_t device_id
    ctypedef struct DLDataType:
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct DLTensor:
        void* data
        DLDevice device
        int32_t ndim
        DLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset
    ctypedef struct DLManagedTensor:
        DLTensor dl_tensor
    ctypedef struct DLPackVersion:
        uint32_t major
        uint32_t minor
    ctypedef struct DLManagedTensorVersioned:
        DLPackVersion version
        void* manager_ctx
        void (*deleter)(DLManagedTensorVersioned* self)
        uint64_t flags
        DLTensor dl_tensor
    ctypedef int (*DLPackManagedTensorAllocator)(
        DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
        void (*SetError)(void* error_ctx, const char* kind, const char* message) noexcept
    ) noexcept
    ctypedef int (*DLPackManagedTensorFromPyObjectNoSync)(
        void* py_object, DLManagedTensorVersioned** out) noexcept
    ctypedef int (*DLPackManagedTensorToPyObjectNoSync)(
        DLManagedTensorVersioned* tensor, void** out_py_object) noexcept
    ctypedef int (*DLPackDLTensorFromPyObjectNoSync)(void* py_object, DLTensor* out) noexcept
    ctypedef struct DLPackExchangeAPIHeader:
        DLPackVersion version
        DLPackExchangeAPIHeader* prev_api
    ctypedef struct DLPackExchangeAPI:
        DLPackExchangeAPIHeader header
        DLPackManagedTensorAllocator managed_tensor_allocator
        DLPackManagedTensorFromPyObjectNoSync managed_tensor_from_py_object_no_sync
        DLPackManagedTensorToPyObjectNoSync managed_tensor_to_py_object_no_sync
        DLPackDLTensorFromPyObjectNoSync dltensor_from_py_object_no_sync
        void* current_work_stream
    ctypedef struct TVMFFIAny:
        int32_t type_index
        uint32_t zero_padding
        int64_t v_int64
        double v_float64
        void* v_ptr
        const char* v_c_str
    ctypedef struct TVMFFIByteArray:
        const char* data
        size_t size
    ctypedef struct TVMFFIErrorCell:
        TVMFFIByteArray kind
        TVMFFIByteArray message
    void TVMFFIErrorMoveFromRaised(void** result) nogil
    ctypedef struct TVMFFIObject:
        int32_t type_index
    int TVMFFIObjectDecRef(void* obj) nogil
    int TVMFFIFunctionGetGlobal(const TVMFFIByteArray* name, void** out) nogil
    int TVMFFIFunctionCall(void* func, TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) nogil
    int kTVMFFIRawStr
    int kTVMFFINone, kTVMFFIInt, kTVMFFIBool, kTVMFFIFloat, kTVMFFIDLTensorPtr
    int kTVMFFIStaticObjectBegin

ctypedef int (*SafeCall)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*) noexcept nogil

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


cdef object _raise_kernel_error(int rc):
    cdef void* err = NULL
    TVMFFIErrorMoveFromRaised(&err)
    if err == NULL:
        raise RuntimeError(f"kernel returned error code {rc} without an error message")
    # the error cell follows the object header (TVMFFIErrorGetCellPtr is a header-only inline)
    cdef TVMFFIErrorCell* cell = <TVMFFIErrorCell*>((<char*>err) + sizeof(TVMFFIObject))
    kind = cell.kind.data[:cell.kind.size].decode("utf-8", "replace")
    message = cell.message.data[:cell.message.size].decode("utf-8", "replace")
    TVMFFIObjectDecRef(err)
    if kind == "ValueError":
        raise ValueError(message)
    if kind == "TypeError":
        raise TypeError(message)
    raise RuntimeError(f"{kind}: {message}")


cdef void* _global_function(bytes name) except NULL:
    cdef TVMFFIByteArray array
    cdef void* function = NULL
    array.data = name
    array.size = len(name)
    if TVMFFIFunctionGetGlobal(&array, &function) != 0:
        _raise_kernel_error(-1)
    if function == NULL:
        raise RuntimeError(f"tvm-ffi has no global function {name.decode()!r}")
    return function


def load_library(str path):
    """Load a kernel library the way ``tvm_ffi.load_module(path)`` does, from C.

    Calls tvm-ffi's ``ffi.ModuleLoadFromFile`` (dlopen, the library's context slots filled)
    and ``ffi.ModuleGlobalsAdd`` (the module stays loaded for the process) through
    libtvm_ffi's C API, so the ``cython`` adapter never imports tvm-ffi's Python package
    (tens of milliseconds; seconds where torch is installed, which it imports).

    Raises:
        RuntimeError (or the loader's ValueError/TypeError): the library cannot be loaded.
    """
    cdef bytes encoded = path.encode()
    cdef TVMFFIAny arg
    cdef TVMFFIAny result
    cdef void* load = _global_function(b"ffi.ModuleLoadFromFile")
    cdef void* keep = _global_function(b"ffi.ModuleGlobalsAdd")
    cdef int rc
    memset(&arg, 0, sizeof(TVMFFIAny))
    memset(&result, 0, sizeof(TVMFFIAny))
    arg.type_index = kTVMFFIRawStr
    arg.v_c_str = encoded
    result.type_index = kTVMFFINone
    try:
        rc = TVMFFIFunctionCall(load, &arg, 1, &result)
        if rc != 0:
            _raise_kernel_error(rc)
        if result.type_index < kTVMFFIStaticObjectBegin or result.v_ptr == NULL:
            raise RuntimeError(f"ffi.ModuleLoadFromFile({path!r}) returned no module")
        memset(&arg, 0, sizeof(TVMFFIAny))
        arg.type_index = result.type_index
        arg.v_ptr = result.v_ptr
        memset(&result, 0, sizeof(TVMFFIAny))
        result.type_index = kTVMFFINone
        rc = TVMFFIFunctionCall(keep, &arg, 1, &result)
        if rc != 0:
            _raise_kernel_error(rc)
        if result.type_index >= kTVMFFIStaticObjectBegin and result.v_ptr != NULL:
            TVMFFIObjectDecRef(result.v_ptr)
    finally:
        TVMFFIObjectDecRef(load)
        TVMFFIObjectDecRef(keep)
        if arg.type_index >= kTVMFFIStaticObjectBegin and arg.v_ptr != NULL:
            TVMFFIObjectDecRef(arg.v_ptr)   # the process-wide module list holds it now


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


cdef inline int _format_ok(const char* fmt, ParamInfo* p) noexcept:
    if fmt == NULL:
        return 0
    if fmt[0] == b'@' or fmt[0] == b'=' or fmt[0] == b'<':
        fmt += 1
    if fmt[0] == 0 or fmt[1] != 0:
        return 0
    return fmt[0] == p.fmt_a or (p.fmt_b != 0 and fmt[0] == p.fmt_b)


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


cdef class Launcher:
    """``Launcher(address, specs, n_symbols, slow, outputs_follow, alloc_alignment)``.

    Call it with the caller's args. ``specs`` is a list of dicts built by
    tl_runtime.adapters.cython_adapter; ``slow(args)`` runs the complete path; ``outputs_follow(tensor_type) -> bool`` says whether
    outputs are allocated by the framework of that tensor type (torch) rather than numpy;
    numpy outputs are aligned to ``alloc_alignment`` bytes. With ``address`` 0 the launcher
    checks only and then calls ``delegate(*full_args)`` (a tvm-ffi function) itself.
    """
    cdef SafeCall fn
    cdef int nparams
    cdef int ncaller
    cdef int nsym
    cdef int n_out
    cdef ParamInfo info[MAX_PARAMS]
    cdef object slow
    cdef object outputs_follow
    cdef object delegate
    cdef list dtype_names
    cdef list np_dtypes
    cdef object np_empty
    cdef object np_uint8
    cdef uintptr_t alloc_alignment
    cdef int caller_index[MAX_PARAMS]
    cdef int out_index[MAX_PARAMS]
    # tensor types seen with an exchange API: type, API, whether outputs follow it
    cdef int ntypes
    cdef void* types[MAX_TYPES]
    cdef const DLPackExchangeAPI* apis[MAX_TYPES]
    cdef int follows[MAX_TYPES]
    # per type slot: its ``is_neg`` (torch's lazy negation) and ``requires_grad`` readers
    # (held in ``type_refs``) and how each is asked (``tl_ask``); a NULL ``is_neg`` reader:
    # the type has none; a NULL ``requires_grad`` one: asked with ``getattr`` per call
    cdef void* neg_readers[MAX_TYPES]
    cdef int neg_modes[MAX_TYPES]
    cdef void* grad_readers[MAX_TYPES]
    cdef int grad_modes[MAX_TYPES]
    cdef list names           # parameter names, for the messages of launch_prepared
    cdef list type_refs
    cdef list refused_types
    cdef int check_aliasing   # a written caller tensor and another caller tensor exist

    def __init__(self, uintptr_t address, list specs, int n_symbols, slow,
                 outputs_follow=None, alloc_alignment=64, delegate=None):
        if len(specs) > MAX_PARAMS:
            raise ValueError(f"Launcher: at most {MAX_PARAMS} params, got {len(specs)}")
        if alloc_alignment <= 0 or alloc_alignment & (alloc_alignment - 1):
            raise ValueError(f"Launcher: alloc_alignment must be a power of two, got {alloc_alignment}")
        if address == 0 and delegate is None:
            raise ValueError("Launcher: entry address is 0 and no delegate was given")
        self.fn = <SafeCall>address
        self.delegate = delegate
        self.nparams = len(specs)
        self.nsym = n_symbols
        self.slow = slow
        self.outputs_follow = outputs_follow
        self.alloc_alignment = alloc_alignment
        self.dtype_names = []
        self.np_dtypes = []
        self.type_refs = []
        self.names = []
        self.refused_types = []
        self.ntypes = 0
        self.ncaller = 0
        self.n_out = 0
        try:
            import numpy
        except ImportError:
            numpy = None
        self.np_empty = numpy.empty if numpy is not None else None
        self.np_uint8 = numpy.dtype("uint8") if numpy is not None else None
        cdef int i, k
        cdef ParamInfo* p
        for i, spec in enumerate(specs):
            p = &self.info[i]
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
            self.dtype_names.append(spec["dtype"])
            self.names.append(spec.get("name", f"#{i}"))
            np_dtype = None
            if numpy is not None and spec["formats"]:
                np_dtype = numpy.dtype(spec["dtype"])
            self.np_dtypes.append(np_dtype)
            p.caller_pos = self.ncaller
            if p.is_out_idx:
                self.out_index[self.n_out] = i
                self.n_out += 1
            else:
                self.caller_index[self.ncaller] = i
                self.ncaller += 1
        cdef int n_tensors = 0, n_written = 0
        for k in range(self.ncaller):
            i = self.caller_index[k]
            if self.info[i].kind == TENSOR:
                n_tensors += 1
                n_written += self.info[i].written
        self.check_aliasing = n_tensors > 1 and n_written > 0

    # ------------------------------------------------------------------ tensor types
    cdef int _type_slot(self, object obj) except -2:
        """Slot of ``type(obj)`` in the exchange-API table; -1 when it has no usable API."""
        cdef void* tp = Py_TYPE_PTR(obj)
        cdef int i
        for i in range(self.ntypes):
            if self.types[i] == tp:
                return i
        kind = type(obj)
        if kind in self.refused_types or self.ntypes == MAX_TYPES:
            return -1
        cdef const DLPackExchangeAPI* api = _exchange_api(
            getattr(kind, "__dlpack_c_exchange_api__", None))
        if api == NULL:
            if len(self.refused_types) < MAX_TYPES:
                self.refused_types.append(kind)
            return -1
        cdef int follows = 1 if (self.outputs_follow is not None and self.outputs_follow(kind)) else 0
        # torch's negative bit: a view whose memory holds the values negated (x._neg_view(),
        # z.conj().imag); the DLPack export ignores it, so such tensors go to the slow path.
        # (The conjugate bit exists only on complex tensors, which no dtype code accepts.)
        neg_reader = getattr(kind, "is_neg", None)
        if not callable(neg_reader):
            neg_reader = None
        neg_mode = TL_READ_CALL if neg_reader is None else tl_reader_mode(neg_reader, kind, 0)
        # the attribute as the type holds it (a getter), not as the class returns it
        grad_reader = next((vars(base)["requires_grad"] for base in kind.__mro__
                            if "requires_grad" in vars(base)), None)
        grad_mode = TL_READ_CALL
        if grad_reader is not None:
            grad_mode = tl_reader_mode(grad_reader, kind, 1)
            if grad_mode < 0:
                grad_reader = None   # not a plain property: asked with getattr per call
        # No Python code runs from here on (the GIL stays held): another thread that
        # added this type meanwhile is found, and a slot is filled before it is counted.
        for i in range(self.ntypes):
            if self.types[i] == tp:
                return i
        if self.ntypes == MAX_TYPES:
            return -1
        i = self.ntypes
        self.type_refs.append((kind, neg_reader, grad_reader))   # keeps them (and the API) alive
        self.neg_readers[i] = <void*>neg_reader if neg_reader is not None else NULL
        self.neg_modes[i] = neg_mode
        self.grad_readers[i] = <void*>grad_reader if grad_reader is not None else NULL
        self.grad_modes[i] = grad_mode
        self.types[i] = tp
        self.apis[i] = api
        self.follows[i] = follows
        self.ntypes += 1
        return i

    # ------------------------------------------------------------------ checks
    cdef int _check_shape(self, ParamInfo* p, CallState* st, int j, const int64_t* shape,
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

    cdef int _check_strided(self, ParamInfo* p, CallState* st, int j, const int64_t* shape,
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
        st.spans[j] = reach + 1
        return 1

    cdef int _prepare(self, tuple args, CallState* st, list outputs, int check_only) except -1:
        """Fast checks of every caller arg, then output allocation; 1 = ready, 0 = declined."""
        cdef int i, j, k, overflow, slot, flag
        cdef int64_t value
        cdef ParamInfo* p
        cdef Py_buffer* view
        cdef DLTensor* t
        cdef char* data
        cdef object obj
        st.nheld = 0
        st.first_source = NO_TENSOR
        st.first_type = -1
        for k in range(self.nsym):
            st.symbols[k] = -1
        for j in range(self.nparams):
            p = &self.info[j]
            if p.is_out_idx:
                continue
            obj = args[p.caller_pos]
            if not p.fast_ok:
                return 0
            if p.kind == SCALAR_INT:
                if type(obj) is not int:
                    return 0
                value = PyLong_AsLongLongAndOverflow(obj, &overflow)
                if overflow != 0 or value < p.lo or value > p.hi:
                    return 0
                st.packed[j].type_index = kTVMFFIInt
                st.packed[j].zero_padding = 0
                st.packed[j].v_int64 = value
                continue
            if p.kind == SCALAR_FLOAT:
                if type(obj) is not float:
                    return 0
                if p.bits == 32 and not (-3.4028234663852886e38 <= PyFloat_AS_DOUBLE(obj) <= 3.4028234663852886e38):
                    return 0
                st.packed[j].type_index = kTVMFFIFloat
                st.packed[j].zero_padding = 0
                st.packed[j].v_float64 = PyFloat_AS_DOUBLE(obj)
                continue
            if p.kind == SCALAR_BOOL:
                if type(obj) is not bool:
                    return 0
                st.packed[j].type_index = kTVMFFIBool
                st.packed[j].zero_padding = 0
                st.packed[j].v_int64 = 1 if obj else 0
                continue
            if PyObject_CheckBuffer(obj):
                if check_only:
                    return 0   # numpy: the tvm_ffi adapter's generated path; others: slow
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
                    if not self._check_strided(p, st, j, <int64_t*>view.shape, <int64_t*>view.strides, p.itemsize):
                        return 0
                elif not self._check_shape(p, st, j, <int64_t*>view.shape, <int64_t*>view.strides, p.itemsize, 0):
                    return 0
                self._fill(&st.tensors[j], &st.packed[j], view.buf, p, st.shapes[j], st.strides[j])
                if st.first_source == NO_TENSOR:
                    st.first_source = BUFFER
                continue
            # DLPack C exchange API (torch): a non-owning DLTensor, no capsule
            slot = self._type_slot(obj)
            if slot < 0:
                return 0
            t = &st.tensors[j]
            if self.apis[slot].dltensor_from_py_object_no_sync(<void*>obj, t) != 0:
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
            # Asked on every call: the bit can flip on the same object over the same memory
            # (``x.data = x._neg_view()``, ``torch._C._set_neg``) with nothing else the
            # export shows changing, so no answer can be kept.
            if self.neg_readers[slot] != NULL:
                flag = tl_ask(self.neg_readers[slot], self.neg_modes[slot], <void*>obj)
                if flag != 0:
                    if flag < 0:
                        PyErr_Clear()   # the slow path asks again and reports it
                    return 0   # lazily negated: the slow path resolves or refuses it
            if p.strided:
                if not self._check_strided(p, st, j, t.shape, t.strides, 1):
                    return 0
            elif not self._check_shape(p, st, j, t.shape, t.strides, 1, check_only):
                return 0
            if p.written:
                if self.grad_readers[slot] != NULL:
                    flag = tl_ask(self.grad_readers[slot], self.grad_modes[slot], <void*>obj)
                    if flag < 0:
                        PyErr_Clear()
                else:
                    flag = 1 if getattr(obj, "requires_grad", False) else 0
                if flag != 0:
                    return 0   # autograd cannot see the kernel's write: the slow path refuses it
            self._fill(t, &st.packed[j], data, p, st.shapes[j], st.strides[j])
            if st.first_source == NO_TENSOR:
                st.first_source = EXCHANGE
                st.first_type = slot
        if self.check_aliasing and self._overlapping(st):
            return 0   # a written argument shares memory with another: the slow path refuses it
        for k in range(self.n_out):
            j = self.out_index[k]
            if not self._allocate_output(j, st, outputs):
                return 0
        return 1

    cdef int _overlapping(self, CallState* st) noexcept:
        """Whether a written caller tensor's byte range meets another caller tensor's."""
        cdef int a, b, i, j
        cdef uintptr_t low_a, high_a, low_b, high_b
        cdef int64_t count
        for a in range(self.ncaller):
            i = self.caller_index[a]
            if self.info[i].kind != TENSOR or not self.info[i].written:
                continue
            count = self.info[i].itemsize * st.spans[i]
            low_a = <uintptr_t>st.tensors[i].data
            high_a = low_a + <uintptr_t>count
            for b in range(self.ncaller):
                j = self.caller_index[b]
                if j == i or self.info[j].kind != TENSOR:
                    continue
                count = self.info[j].itemsize * st.spans[j]
                low_b = <uintptr_t>st.tensors[j].data
                high_b = low_b + <uintptr_t>count
                if low_b < high_a and low_a < high_b:
                    return 1
        return 0

    cdef int _allocate_output(self, int j, CallState* st, list outputs) except -1:
        """Allocate out_idx parameter ``j`` like the first tensor argument; 0 = declined."""
        cdef ParamInfo* p = &self.info[j]
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
        if st.first_source == EXCHANGE and self.follows[st.first_type]:
            api = self.apis[st.first_type]
            if api.managed_tensor_to_py_object_no_sync == NULL:
                return 0
            # The memory is ours (aligned like numpy outputs), handed to the framework with a
            # deleter: one wrap, cheaper than the framework's allocator plus its export.
            managed = _owned_tensor(p, st.shapes[j], nbytes, self.alloc_alignment)
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
            self._fill(t, &st.packed[j], <void*>address, p, st.shapes[j], st.strides[j])
            return 1
        if st.first_source == EXCHANGE or self.np_empty is None or self.np_dtypes[j] is None:
            return 0   # another framework's type, no numpy, or a dtype numpy lacks
        raw = self.np_empty(nbytes + self.alloc_alignment, self.np_uint8)
        PyObject_GetBuffer(raw, &st.views[st.nheld], PyBUF_STRIDES | PyBUF_FORMAT)
        address = <uintptr_t>st.views[st.nheld].buf
        PyBuffer_Release(&st.views[st.nheld])
        offset = (-address) & (self.alloc_alignment - 1)
        out = raw[offset:offset + nbytes].view(self.np_dtypes[j])
        if p.ndim != 1:
            out = out.reshape(tuple([st.shapes[j][i] for i in range(p.ndim)]))
        outputs.append(out)
        self._fill(t, &st.packed[j], <void*>(address + offset), p, st.shapes[j], st.strides[j])
        return 1

    cdef void _release(self, CallState* st) noexcept:
        cdef int k
        for k in range(st.nheld):
            PyBuffer_Release(&st.views[k])
        st.nheld = 0

    cdef object _invoke(self, TVMFFIAny* packed):
        cdef TVMFFIAny result
        cdef int rc
        if self.fn == NULL:
            raise RuntimeError("Launcher: a check-only launcher (address 0) cannot launch")
        memset(&result, 0, sizeof(TVMFFIAny))
        result.type_index = kTVMFFINone
        with nogil:
            rc = self.fn(NULL, packed, self.nparams, &result)
        if rc != 0:
            _raise_kernel_error(rc)
        if result.type_index >= kTVMFFIStaticObjectBegin and result.v_ptr != NULL:
            TVMFFIObjectDecRef(result.v_ptr)

    def __call__(self, *args):
        return self._run(args)

    def run(self, tuple args):
        """``launcher.run(args)`` is ``launcher(*args)``, for callers holding the tuple."""
        return self._run(args)

    cdef object _run(self, tuple args):
        cdef CallState st
        cdef int ready
        cdef int j, k
        cdef list outputs = [] if self.n_out else None
        if len(args) != self.ncaller:
            return self.slow(args)
        check_only = self.fn == NULL
        try:
            ready = self._prepare(args, &st, outputs, check_only)
            if ready and not check_only:
                self._invoke(st.packed)
        finally:
            self._release(&st)
        if not ready:
            return self.slow(args)
        if check_only:
            # tvm-ffi's call takes the same objects (torch through the same exchange API)
            if not self.n_out:
                self.delegate(*args)
                return None
            full = [None] * self.nparams
            for j in range(self.ncaller):
                full[self.caller_index[j]] = args[j]
            for k in range(self.n_out):
                full[self.out_index[k]] = outputs[k]
            self.delegate(*full)
        if outputs is None:
            return None
        if len(outputs) == 1:
            return outputs[0]
        return tuple(outputs)

    cdef inline void _fill(self, DLTensor* t, TVMFFIAny* a, void* data, ParamInfo* p,
                           int64_t* shape, int64_t* strides) noexcept:
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

    def launch_prepared(self, list full_args):
        """Call with every parameter already checked and normalized by the Python checker.

        Tensors may be buffer-protocol objects, tensors of a type with a DLPack C exchange
        API, or other DLPack producers (their capsules stay alive during the call); scalars
        are Python int/float/bool.
        """
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
        if len(full_args) != self.nparams:
            raise TypeError(f"launch_prepared: expected {self.nparams} args, got {len(full_args)}")
        try:
            for j in range(self.nparams):
                p = &self.info[j]
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
                            f"parameter {self.names[j]!r}: expected at most {MAX_DIMS} dims of "
                            f"whole elements, got {views[nheld - 1].ndim} dims of "
                            f"{views[nheld - 1].itemsize}-byte items")
                    for k in range(views[nheld - 1].ndim):
                        shapes[j][k] = views[nheld - 1].shape[k]
                        # Never round a stride: the kernel would read and write between elements.
                        if views[nheld - 1].strides[k] % views[nheld - 1].itemsize:
                            raise ValueError(
                                f"parameter {self.names[j]!r}: expected byte strides that are "
                                f"whole multiples of the element size "
                                f"({views[nheld - 1].itemsize} bytes), got byte stride "
                                f"{views[nheld - 1].strides[k]} in dim {k}")
                        strides[j][k] = views[nheld - 1].strides[k] // views[nheld - 1].itemsize
                    self._fill(&tensors[j], &packed[j], views[nheld - 1].buf, p, shapes[j], strides[j])
                else:
                    slot = self._type_slot(obj)
                    if slot >= 0 and self.apis[slot].dltensor_from_py_object_no_sync(<void*>obj, &tensors[j]) == 0:
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
            self._invoke(packed)
        finally:
            for k in range(nheld):
                PyBuffer_Release(&views[k])
        del capsules
