# Job: calling into tvm-ffi's C API: loading a kernel library (``load_library``), calling a
# kernel's packed C entry (``_invoke``, the launch itself, GIL released) and turning the
# error a call raised on the C side into a Python exception.

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
    if kind == "AssertionError":  # a failed T.device_assert (tl_codegen_cpu)
        raise AssertionError(message)
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



cdef object _invoke(SafeCall fn, int nparams, TVMFFIAny* packed):
    """Call the entry ``fn`` with ``nparams`` packed arguments; raise what the kernel raised."""
    cdef TVMFFIAny result
    cdef int rc
    if fn == NULL:
        raise RuntimeError("Launcher: a check-only launcher (address 0) cannot launch")
    memset(&result, 0, sizeof(TVMFFIAny))
    result.type_index = kTVMFFINone
    with nogil:
        rc = fn(NULL, packed, nparams, &result)
    if rc != 0:
        _raise_kernel_error(rc)
    if result.type_index >= kTVMFFIStaticObjectBegin and result.v_ptr != NULL:
        TVMFFIObjectDecRef(result.v_ptr)
