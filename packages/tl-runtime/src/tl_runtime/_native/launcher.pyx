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

This file holds the ``Launcher`` class and its per-call loop; each job it calls is a piece
included below. Includes keep one module and one C file: the pieces' functions are static C
functions of it, called directly (no method table) and open to the C compiler's inlining.
Every ``*.pxi`` beside this file is part of the launcher's source: the runtime's build and
the wheel's copy and hash them all (``tl_runtime.launcher_sources``).
"""

include "ffi_api.pxi"             # CPython, libc, tvm-ffi and DLPack C declarations
include "params.pxi"              # ParamInfo (per parameter) and CallState (per call)
include "kernel_calls.pxi"        # library loading, the entry call, kernel errors
include "layout_checks.pxi"       # shapes, strides, symbols, overlap; filling DLTensors
include "numpy_arguments.pxi"     # buffer-protocol (numpy) arguments
include "tensor_types.pxi"        # per-type facts: exchange API, is_neg/requires_grad readers
include "exchange_arguments.pxi"  # DLPack exchange API (torch) arguments
include "outputs.pxi"             # out_idx outputs (numpy or the first tensor's framework)
include "prepared_launch.pxi"     # launch_prepared: arguments the Python checker normalized
include "source_digest.pxi"       # SOURCE_DIGEST: written by the build, not part of the source


cdef int _is_masked_type(object kind) except -1:
    """Whether ``kind`` is a numpy masked array type (``numpy.ma``): its buffer holds the
    masked elements' data too, and a kernel would read them and drop the mask."""
    for base in kind.__mro__:
        if str(getattr(base, "__module__", "")).startswith("numpy.ma"):
            return 1
    return 0


cdef class Launcher:
    """``Launcher(address, specs, n_symbols, slow, outputs_follow, alloc_alignment, delegate,
    negative_bit_layout, write_marker, version_count_layout)``.

    Call it with the caller's args. ``specs`` is a list of dicts built by
    tl_runtime.adapters.cython_adapter; ``slow(args)`` runs the complete path; ``outputs_follow(tensor_type) -> bool`` says whether
    outputs are allocated by the framework of that tensor type (torch) rather than numpy;
    numpy outputs are aligned to ``alloc_alignment`` bytes. With ``address`` 0 the launcher
    checks only and then calls ``delegate(*full_args)`` (a tvm-ffi function) itself.
    ``negative_bit_layout(tensor_type)`` gives where instances hold torch's negative bit
    (``tl_runtime.torch_negative_bit``) or None: then ``is_neg()`` is asked on each call.
    ``write_marker(tensor_type)`` gives what to call, after a launch, with the tuple of that
    type's caller tensors the kernel wrote (torch's version count:
    ``tl_runtime.tensor_views.in_place_write_marker``), or None;
    ``version_count_layout(tensor_type)`` where instances hold torch's version count
    (``tl_runtime.torch_version_count``), moved in memory instead where known.
    """
    cdef SafeCall fn
    cdef int nparams
    cdef int ncaller
    cdef int nsym
    cdef int n_out
    cdef ParamInfo info[MAX_PARAMS]
    cdef object slow
    cdef object plain_buffer_type   # the last buffer type found not to be a masked array
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
    # where torch's negative bit lies (tl_runtime.torch_negative_bit); mask 0: not known
    cdef Py_ssize_t neg_object_offsets[MAX_TYPES]
    cdef Py_ssize_t neg_impl_offsets[MAX_TYPES]
    cdef uint64_t neg_masks[MAX_TYPES]
    cdef object negative_bit_layout
    cdef void* grad_readers[MAX_TYPES]
    cdef int grad_modes[MAX_TYPES]
    # per type slot: what marks its tensors written in place (held in ``type_refs``), or NULL
    cdef void* write_markers[MAX_TYPES]
    cdef object write_marker
    # where torch's version count lies (tl_runtime.torch_version_count); known 0: call the marker
    cdef int version_known[MAX_TYPES]
    cdef Py_ssize_t version_object_offsets[MAX_TYPES]
    cdef Py_ssize_t version_impl_offsets[MAX_TYPES]
    cdef Py_ssize_t version_counter_offsets[MAX_TYPES]
    cdef object version_count_layout
    cdef list names           # parameter names, for the messages of launch_prepared
    cdef list type_refs
    cdef list refused_types
    cdef int check_aliasing   # a written caller tensor and another caller tensor exist

    def __init__(self, uintptr_t address, list specs, int n_symbols, slow,
                 outputs_follow=None, alloc_alignment=64, delegate=None,
                 negative_bit_layout=None, write_marker=None, version_count_layout=None):
        if len(specs) > MAX_PARAMS:
            raise ValueError(f"Launcher: at most {MAX_PARAMS} params, got {len(specs)}")
        if alloc_alignment <= 0 or alloc_alignment & (alloc_alignment - 1):
            raise ValueError(f"Launcher: alloc_alignment must be a power of two, got {alloc_alignment}")
        if address == 0 and delegate is None:
            raise ValueError("Launcher: entry address is 0 and no delegate was given")
        self.fn = <SafeCall>address
        self.delegate = delegate
        self.negative_bit_layout = negative_bit_layout
        self.write_marker = write_marker
        self.version_count_layout = version_count_layout
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
            _read_param(p, spec)
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
                _invoke(self.fn, self.nparams, st.packed)
        finally:
            self._release(&st)
        if not ready:
            return self.slow(args)
        if check_only:
            # tvm-ffi's call takes the same objects (torch through the same exchange API)
            if not self.n_out:
                self.delegate(*args)
            else:
                full = [None] * self.nparams
                for j in range(self.ncaller):
                    full[self.caller_index[j]] = args[j]
                for k in range(self.n_out):
                    full[self.out_index[k]] = outputs[k]
                self.delegate(*full)
        if st.nwritten:
            self._mark_written(args, &st)
        if outputs is None:
            return None
        if len(outputs) == 1:
            return outputs[0]
        return tuple(outputs)

    cdef int _prepare(self, tuple args, CallState* st, list outputs, int check_only) except -1:
        """Fast checks of every caller arg, then output allocation; 1 = ready, 0 = declined."""
        cdef int j, k, overflow
        cdef int64_t value
        cdef ParamInfo* p
        cdef object obj
        st.nheld = 0
        st.nwritten = 0
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
                # float32: what rounds past its largest value (2**128 * (1 - 2**-25) and up,
                # dtypes.DtypeInfo.overflow) goes to the checker, which refuses it
                if p.bits == 32 and not (-3.4028235677973366e38 < PyFloat_AS_DOUBLE(obj) < 3.4028235677973366e38):
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
                if type(obj) is not self.plain_buffer_type:
                    if _is_masked_type(type(obj)):
                        return 0   # its mask would be dropped: the slow path refuses it
                    self.plain_buffer_type = type(obj)
                if not _buffer_argument(p, st, j, obj):
                    return 0
                continue
            # DLPack C exchange API (torch): a non-owning DLTensor, no capsule
            if not _exchange_argument(self, p, st, j, obj, check_only):
                return 0
        if self.check_aliasing and _overlapping(self, st):
            return 0   # a written argument shares memory with another: the slow path refuses it
        for k in range(self.n_out):
            j = self.out_index[k]
            if not _allocate_output(self, j, st, outputs):
                return 0
        return 1

    cdef int _mark_written(self, tuple args, CallState* st) except -1:
        """Tell each written caller tensor's framework of the write: torch's version count
        moved in memory where ``tl_runtime.torch_version_count`` found it, else through
        the type's write marker (``torch._C._increment_version``)."""
        cdef int k, slot
        for k in range(st.nwritten):
            slot = st.written_slots[k]
            obj = args[self.info[st.written_params[k]].caller_pos]
            if self.version_known[slot] and tl_add_to_version_count(
                    <void*>obj, self.version_object_offsets[slot],
                    self.version_impl_offsets[slot], self.version_counter_offsets[slot]) >= 0:
                continue
            (<object>self.write_markers[slot])((obj,))
        return 0

    cdef void _release(self, CallState* st) noexcept:
        cdef int k
        for k in range(st.nheld):
            PyBuffer_Release(&st.views[k])
        st.nheld = 0

    def launch_prepared(self, list full_args):
        """Call with every parameter already checked and normalized by the Python checker.

        Tensors may be buffer-protocol objects, tensors of a type with a DLPack C exchange
        API, or other DLPack producers (their capsules stay alive during the call); scalars
        are Python int/float/bool.
        """
        _launch_prepared(self, full_args)
