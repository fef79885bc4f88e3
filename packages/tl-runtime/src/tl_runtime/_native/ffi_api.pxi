# Job: the C declarations the launcher is written against (included first by launcher.pyx):
# the CPython and libc functions it calls, tvm-ffi's C API (``tvm/ffi/c_api.h``: the packed
# argument cell, errors, global functions, object references) and the DLPack structs that
# header declares (DLTensor, the managed tensors, the C exchange API torch publishes).
# Declarations only: no code here runs.

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
