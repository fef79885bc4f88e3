# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""tl-runtime's Cython launcher: checks arguments and calls a kernel's packed C entry directly.

Data pointers come straight from the buffer protocol (numpy) or a DLPack capsule; the
packed argument array is built in C and the entry (``int f(void*, const TVMFFIAny*,
int32_t, TVMFFIAny*)``) is called without tvm-ffi's Python marshalling. Anything the fast
checks decline goes to the Python checker (``slow``), which raises the precise error or
returns normalized arguments for ``launch_prepared``.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyObject_CheckBuffer, PyBUF_STRIDES, PyBUF_FORMAT
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.float cimport PyFloat_AS_DOUBLE
from libc.stdint cimport int64_t, int32_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memset

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
    ctypedef struct TVMFFIAny:
        int32_t type_index
        uint32_t zero_padding
        int64_t v_int64
        double v_float64
        void* v_ptr
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
    int kTVMFFINone, kTVMFFIInt, kTVMFFIBool, kTVMFFIFloat, kTVMFFIDLTensorPtr
    int kTVMFFIStaticObjectBegin

ctypedef int (*SafeCall)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*) noexcept nogil

cdef enum:
    MAX_PARAMS = 64
    MAX_DIMS = 8

cdef enum Kind:
    TENSOR = 0
    SCALAR_INT = 1
    SCALAR_FLOAT = 2
    SCALAR_BOOL = 3

cdef struct ParamInfo:
    int kind
    int written          # output/inout the caller passes: read-only or misaligned is an
                         # error (the slow path says so), never copied
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
    int fast_ok          # 0: always defer to the slow path (declared strides, odd dtype)
    int64_t lo
    int64_t hi


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


cdef inline int _format_ok(const char* fmt, ParamInfo* p) noexcept:
    if fmt == NULL:
        return 0
    if fmt[0] == b'@' or fmt[0] == b'=' or fmt[0] == b'<':
        fmt += 1
    if fmt[0] == 0 or fmt[1] != 0:
        return 0
    return fmt[0] == p.fmt_a or (p.fmt_b != 0 and fmt[0] == p.fmt_b)


cdef class Launcher:
    """``Launcher(address, specs, n_symbols, allocate, slow)``; call it with the caller's args.

    ``specs`` is a list of dicts built by tl_runtime.adapters.cython_adapter; ``allocate``
    is ``(dtype_name, shape) -> aligned numpy array``; ``slow(args)`` returns the full
    normalized argument list (and raises on invalid input) plus the outputs.
    """
    cdef SafeCall fn
    cdef int nparams
    cdef int ncaller
    cdef int nsym
    cdef int n_out
    cdef ParamInfo info[MAX_PARAMS]
    cdef object allocate
    cdef object slow
    cdef list dtype_names
    cdef int caller_index[MAX_PARAMS]
    cdef int out_index[MAX_PARAMS]

    def __init__(self, uintptr_t address, list specs, int n_symbols, allocate, slow):
        if address == 0:
            raise ValueError("Launcher: entry address is NULL")
        if len(specs) > MAX_PARAMS:
            raise ValueError(f"Launcher: at most {MAX_PARAMS} params, got {len(specs)}")
        self.fn = <SafeCall>address
        self.nparams = len(specs)
        self.nsym = n_symbols
        self.allocate = allocate
        self.slow = slow
        self.dtype_names = []
        self.ncaller = 0
        self.n_out = 0
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
            p.fast_ok = spec["fast_ok"]
            p.lo = spec["lo"]
            p.hi = spec["hi"]
            self.dtype_names.append(spec["dtype"])
            p.caller_pos = self.ncaller
            if p.is_out_idx:
                self.out_index[self.n_out] = i
                self.n_out += 1
            else:
                self.caller_index[self.ncaller] = i
                self.ncaller += 1

    cdef object _invoke(self, TVMFFIAny* packed):
        cdef TVMFFIAny result
        cdef int rc
        memset(&result, 0, sizeof(TVMFFIAny))
        result.type_index = kTVMFFINone
        with nogil:
            rc = self.fn(NULL, packed, self.nparams, &result)
        if rc != 0:
            _raise_kernel_error(rc)
        if result.type_index >= kTVMFFIStaticObjectBegin and result.v_ptr != NULL:
            TVMFFIObjectDecRef(result.v_ptr)

    def __call__(self, *args):
        cdef TVMFFIAny packed[MAX_PARAMS]
        cdef DLTensor tensors[MAX_PARAMS]
        cdef int64_t shapes[MAX_PARAMS][MAX_DIMS]
        cdef int64_t strides[MAX_PARAMS][MAX_DIMS]
        cdef Py_buffer views[MAX_PARAMS]
        cdef int held[MAX_PARAMS]
        cdef int64_t symbols[MAX_PARAMS * MAX_DIMS]
        cdef int nheld = 0
        cdef int i, j, k, overflow
        cdef int64_t want, got, stride, value
        cdef ParamInfo* p
        cdef object obj
        cdef list outputs
        if len(args) != self.ncaller:
            return self.slow(args)
        for k in range(self.nsym):
            symbols[k] = -1
        outputs = None
        try:
            for j in range(self.nparams):
                p = &self.info[j]
                if p.is_out_idx:
                    continue
                obj = args[p.caller_pos]
                if not p.fast_ok:
                    return self.slow(args)
                if p.kind == SCALAR_INT:
                    if type(obj) is not int:
                        return self.slow(args)
                    value = PyLong_AsLongLongAndOverflow(obj, &overflow)
                    if overflow != 0 or value < p.lo or value > p.hi:
                        return self.slow(args)
                    packed[j].type_index = kTVMFFIInt
                    packed[j].zero_padding = 0
                    packed[j].v_int64 = value
                    continue
                if p.kind == SCALAR_FLOAT:
                    if type(obj) is not float:
                        return self.slow(args)
                    if p.bits == 32 and not (-3.4028234663852886e38 <= PyFloat_AS_DOUBLE(obj) <= 3.4028234663852886e38):
                        return self.slow(args)
                    packed[j].type_index = kTVMFFIFloat
                    packed[j].zero_padding = 0
                    packed[j].v_float64 = PyFloat_AS_DOUBLE(obj)
                    continue
                if p.kind == SCALAR_BOOL:
                    if type(obj) is not bool:
                        return self.slow(args)
                    packed[j].type_index = kTVMFFIBool
                    packed[j].zero_padding = 0
                    packed[j].v_int64 = 1 if obj else 0
                    continue
                # tensor: buffer protocol only on the fast path
                if not PyObject_CheckBuffer(obj):
                    return self.slow(args)
                try:
                    PyObject_GetBuffer(obj, &views[nheld], PyBUF_STRIDES | PyBUF_FORMAT)
                except Exception:
                    return self.slow(args)   # the slow path reports the precise error
                held[nheld] = j
                nheld += 1
                if (not _format_ok(views[nheld - 1].format, p)
                        or views[nheld - 1].itemsize != p.itemsize
                        or views[nheld - 1].ndim != p.ndim
                        or (views[nheld - 1].readonly and p.written)
                        or (<uintptr_t>views[nheld - 1].buf) & p.align_mask):
                    return self.slow(args)
                stride = 1
                for k in range(p.ndim - 1, -1, -1):
                    got = views[nheld - 1].shape[k]
                    want = p.dims[k]
                    if want >= 0:
                        if got != want:
                            return self.slow(args)
                    elif symbols[-want - 1] < 0:
                        symbols[-want - 1] = got
                    elif symbols[-want - 1] != got:
                        return self.slow(args)
                    if got != 1 and views[nheld - 1].strides[k] != stride * p.itemsize:
                        return self.slow(args)
                    shapes[j][k] = got
                    strides[j][k] = stride
                    stride *= got
                self._fill(&tensors[j], &packed[j], views[nheld - 1].buf, p, shapes[j], strides[j])
            if self.n_out:
                outputs = []
                for k in range(self.n_out):
                    j = self.out_index[k]
                    p = &self.info[j]
                    shape = []
                    for i in range(p.ndim):
                        want = p.dims[i]
                        shape.append(want if want >= 0 else symbols[-want - 1])
                    obj = self.allocate(self.dtype_names[j], tuple(shape))
                    outputs.append(obj)
                    PyObject_GetBuffer(obj, &views[nheld], PyBUF_STRIDES | PyBUF_FORMAT)
                    held[nheld] = j
                    nheld += 1
                    stride = 1
                    for i in range(p.ndim - 1, -1, -1):
                        shapes[j][i] = views[nheld - 1].shape[i]
                        strides[j][i] = stride
                        stride *= shapes[j][i]
                    self._fill(&tensors[j], &packed[j], views[nheld - 1].buf, p, shapes[j], strides[j])
            self._invoke(packed)
        finally:
            for k in range(nheld):
                PyBuffer_Release(&views[k])
        if outputs is None:
            return None
        if len(outputs) == 1:
            return outputs[0]
        return tuple(outputs)

    cdef inline void _fill(self, DLTensor* t, TVMFFIAny* a, void* data, ParamInfo* p,
                           int64_t* shape, int64_t* strides) noexcept:
        t.data = data
        t.device.device_type = 1
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

        Tensors may be buffer-protocol objects or DLPack producers (their capsules stay
        alive during the call); scalars are Python int/float/bool.
        """
        cdef TVMFFIAny packed[MAX_PARAMS]
        cdef DLTensor tensors[MAX_PARAMS]
        cdef Py_buffer views[MAX_PARAMS]
        cdef int64_t shapes[MAX_PARAMS][MAX_DIMS]
        cdef int64_t strides[MAX_PARAMS][MAX_DIMS]
        cdef int nheld = 0
        cdef int j, k
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
                    for k in range(views[nheld - 1].ndim):
                        shapes[j][k] = views[nheld - 1].shape[k]
                        strides[j][k] = views[nheld - 1].strides[k] // views[nheld - 1].itemsize
                    self._fill(&tensors[j], &packed[j], views[nheld - 1].buf, p, shapes[j], strides[j])
                else:
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
