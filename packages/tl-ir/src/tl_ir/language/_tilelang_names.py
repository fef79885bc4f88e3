"""The names TileLang's classic ``import tilelang.language as T`` exports, by the module
that defines them there (the interface this language is compared against; the
compatibility table of docs/language.md is generated from it)."""

from __future__ import annotations

__all__ = ["TILELANG_NAMES"]

_GROUPS: dict[str, str] = {
    "common": (
        "BaseTileScheduler Fragment FragmentBuffer GemmWarpPolicy Kernel KernelLaunchFrame "
        "Layout LocalBuffer Parallel Persistent PersistentTileScheduler Pipelined Serial "
        "SharedBuffer StridedTensor Tensor Unroll Vectorized WSID WSInstr WSOpRef WSPipeline "
        "WSRole WSSchedule WSScope WSSync WSSyncKind access_ptr activemask all_of all_sync "
        "alloc_barrier alloc_fragment alloc_global alloc_local alloc_reducer alloc_shared "
        "alloc_var allocate annotate_layout annotate_restrict_buffers annotate_safe_value "
        "annotate_ws_schedule ws_op any_of any_sync async_copy atomic_add atomic_addx2 "
        "atomic_addx4 atomic_load atomic_max atomic_min atomic_or atomic_store ballot "
        "ballot_sync barrier_arrive barrier_wait c2d_im2col clamp clear copy cummax cumsum "
        "dynamic empty fill reducer_init reducer_update finalize_reducer gemm gemm_sp "
        "get_block_binding get_block_bindings get_block_extent get_block_extents get_lane_idx "
        "get_let_value get_thread_binding get_thread_bindings get_thread_extent "
        "get_thread_extents get_warp_idx get_warp_idx_sync has_let_value im2col import_source "
        "index_to_coordinates inline loop_break make_tensor make_tensor_from_addr "
        "mbarrier_arrive mbarrier_arrive_expect_tx mbarrier_expect_tx mbarrier_wait_parity "
        "meta_class no_set_max_nreg reduce reduce_absmax reduce_abssum reduce_bitand "
        "reduce_bitor reduce_bitxor reduce_max reduce_min reduce_sum reshape shfl_down "
        "shfl_sync shfl_up shfl_xor symbolic sync_global sync_grid sync_threads sync_warp "
        "syncthreads_and syncthreads_count syncthreads_or transpose use_swizzle view "
        "warp_reduce_bitand warp_reduce_bitor warp_reduce_max warp_reduce_min warp_reduce_sum "
    ),
    "math": (
        "__log __log2 __log10 __tan __cos __sin __exp10 __exp fast_rcp ieee_add ieee_sub "
        "ieee_mul ieee_fmaf ieee_frcp ieee_fsqrt ieee_frsqrt ieee_fdiv add2 sub2 mul2 fma2 "
        "max2 min2 abs2 "
    ),
    "tir_ir": (
        "Any IntImm PrimExpr Select Shuffle StringImm TVMBackendAllocWorkspace "
        "TVMBackendFreeWorkspace abs acos acosh address_of align_up anylist_getitem "
        "anylist_resetitem anylist_setitem_call_cpacked anylist_setitem_call_packed asin "
        "asinh assume atan atan2 atanh bitwise_and bitwise_not bitwise_or bitwise_xor "
        "call_cpacked call_cpacked_lowered call_extern call_intrin call_llvm_intrin "
        "call_llvm_pure_intrin call_packed call_packed_lowered call_pure_extern cast cdiv "
        "ceil ceildiv clz copysign cos cosh create_barriers end_profile_intrinsic erf exp "
        "exp10 exp2 extract_lane floor floordiv floormod fmod grid hypot if_then_else "
        "infinity isfinite isinf isnan isnullptr ldexp likely log log10 log1p log2 "
        "lookup_param max max_value min min_value nearbyint nextafter parallel popcount pow "
        "ptx_arrive_barrier ptx_arrive_barrier_expect_tx ptx_commit_group ptx_cp_async "
        "ptx_cp_async_barrier ptx_init_barrier_thread_count ptx_wait_group q_multiply_shift "
        "q_multiply_shift_per_axis reinterpret ret round rsqrt serial shift_left shift_right "
        "sigmoid sin sinh sqrt start_profile_intrinsic tan tanh thread_binding trunc truncdiv "
        "truncmod tvm_access_ptr tvm_bmma_sync tvm_fill_fragment tvm_load_matrix_sync "
        "tvm_mma_sync tvm_stack_alloca tvm_stack_make_array tvm_stack_make_shape "
        "tvm_storage_sync tvm_store_matrix_sync tvm_struct_get tvm_struct_set "
        "tvm_thread_allreduce tvm_thread_invariant tvm_throw_last_error tvm_tuple "
        "tvm_warp_activemask tvm_warp_shuffle tvm_warp_shuffle_down tvm_warp_shuffle_up undef "
        "unroll vectorcombine vectorhigh vectorized vectorlow vscale "
    ),
    "eager": (
        "prim_func macro PrimFunc JITFunc Ref const annotate_compile_flags annotate_pass_configs "
    ),
    "dtypes": (
        "bool short int uint long half float double int4 int8 int16 int32 int64 int8x2 "
        "int16x2 int32x2 int64x2 int8x4 int16x4 int32x4 int64x4 int8x8 int16x8 int32x8 "
        "int64x8 int8x16 int16x16 int32x16 int64x16 int8x32 int16x32 int32x32 int64x32 "
        "int8x64 int16x64 int32x64 int64x64 uint8 uint16 uint32 uint64 uint8x2 uint16x2 "
        "uint32x2 uint64x2 uint8x4 uint16x4 uint32x4 uint64x4 uint8x8 uint16x8 uint32x8 "
        "uint64x8 uint8x16 uint16x16 uint32x16 uint64x16 uint8x32 uint16x32 uint32x32 "
        "uint64x32 uint8x64 uint16x64 uint32x64 uint64x64 float16 float32 float64 float16x2 "
        "float32x2 float64x2 float16x4 float32x4 float64x4 float16x8 float32x8 float64x8 "
        "float16x16 float32x16 float64x16 float16x32 float32x32 float64x32 float16x64 "
        "float32x64 float64x64 float8_e3m4 float8_e3m4x2 float8_e3m4x4 float8_e3m4x8 "
        "float8_e3m4x16 float8_e3m4x32 float8_e3m4x64 float8_e4m3 float8_e4m3x2 float8_e4m3x4 "
        "float8_e4m3x8 float8_e4m3x16 float8_e4m3x32 float8_e4m3x64 float8_e4m3b11fnuz "
        "float8_e4m3b11fnuzx2 float8_e4m3b11fnuzx4 float8_e4m3b11fnuzx8 float8_e4m3b11fnuzx16 "
        "float8_e4m3b11fnuzx32 float8_e4m3b11fnuzx64 float8_e4m3fn float8_e4m3fnx2 "
        "float8_e4m3fnx4 float8_e4m3fnx8 float8_e4m3fnx16 float8_e4m3fnx32 float8_e4m3fnx64 "
        "float8_e4m3fnuz float8_e4m3fnuzx2 float8_e4m3fnuzx4 float8_e4m3fnuzx8 "
        "float8_e4m3fnuzx16 float8_e4m3fnuzx32 float8_e4m3fnuzx64 float8_e5m2 float8_e5m2x2 "
        "float8_e5m2x4 float8_e5m2x8 float8_e5m2x16 float8_e5m2x32 float8_e5m2x64 "
        "float8_e5m2fnuz float8_e5m2fnuzx2 float8_e5m2fnuzx4 float8_e5m2fnuzx8 "
        "float8_e5m2fnuzx16 float8_e5m2fnuzx32 float8_e5m2fnuzx64 float8_e8m0fnu "
        "float8_e8m0fnux2 float8_e8m0fnux4 float8_e8m0fnux8 float8_e8m0fnux16 "
        "float8_e8m0fnux32 float8_e8m0fnux64 float6_e2m3fn float6_e2m3fnx2 float6_e2m3fnx4 "
        "float6_e2m3fnx8 float6_e2m3fnx16 float6_e2m3fnx32 float6_e2m3fnx64 float6_e3m2fn "
        "float6_e3m2fnx2 float6_e3m2fnx4 float6_e3m2fnx8 float6_e3m2fnx16 float6_e3m2fnx32 "
        "float6_e3m2fnx64 float4_e2m1fn float4_e2m1fnx2 float4_e2m1fnx4 float4_e2m1fnx8 "
        "float4_e2m1fnx16 float4_e2m1fnx32 float4_e2m1fnx64 float4_e2m1_unpacked bfloat16 "
        "bfloat16x2 tfloat32 tfloat32x2 tfloat32x4 tfloat32x8 tfloat32x16 tfloat32x32 "
        "tfloat32x64 dtype AnyDType get_tvm_dtype "
    ),
    "cuda_api": (
        "ClusterKernel CUDASourceCodeKernel alloc_cluster_barrier alloc_descriptor alloc_tmem "
        "annotate_consumer_reg_alloc annotate_l2_hit_ratio annotate_min_blocks_per_sm "
        "annotate_producer_reg_dealloc copy_cluster create_tma_descriptor deallocate_tmem "
        "dec_max_nreg disable_warp_group_reg_alloc fence_proxy_async get_warp_group_idx "
        "inc_max_nreg increase_descriptor_offset ldg128 ldg256 ldg32 ldg64 lds128 lds32 lds64 "
        "match_all_sync match_any_sync named_barrier_arrive ptx_arrive_cluster_barrier "
        "ptx_mma_sm70 set_max_nreg shuffle_elect stg128 stg256 stg32 stg64 sts128 sts32 sts64 "
        "tma_copy tma_gather4 tma_gather4_bytes tma_load tma_load_2sm tma_scatter4 "
        "tma_store_arrive tma_store_wait "
    ),
    "cluster": (
        "cluster_arrive_relaxed cluster_arrive cluster_wait cluster_sync "
        "block_rank_in_cluster clc_try_cancel clc_try_cancel_multicast clc_is_canceled "
        "clc_get_first_ctaid_x clc_get_first_ctaid_y clc_get_first_ctaid_z "
    ),
    "intrinsics": (
        "SparseTensorCoreIntrinEmitter TCGEN05DescriptorParams TCGEN05TensorCoreIntrinEmitter "
        "TensorCoreIntrinEmitter TensorCoreIntrinEmitterSM120 "
        "TensorCoreIntrinEmitterWithLadderTransform WGMMADescriptorParams "
        "WGMMATensorCoreIntrinEmitter WGSparseTensorCoreIntrinEmitter __ffs __fns __ldg "
        "alloc_tcgen05_instr_desc alloc_tcgen05_instruction_desc alloc_tcgen05_smem_desc "
        "alloc_wgmma_desc compute_gmma_descriptor compute_umma_descriptor "
        "cp_async_barrier_noinc device_assert get_ldmatrix_offset get_mma_micro_size "
        "get_swizzle_layout initialize_tcgen05_descriptor initialize_wgmma_descriptor "
        "make_blockscaled_gemm_layout make_mma_swizzle_layout mma_store_index_map "
        "ptx_cp_async_bulk ptx_ldmatrix ptx_mma ptx_mma_sp ptx_tcgen05_mma_blockscaled_ss "
        "ptx_tcgen05_mma_ss ptx_tcgen05_mma_ts ptx_wgmma_rs ptx_wgmma_sp_rs ptx_wgmma_sp_ss "
        "ptx_wgmma_ss tcgen05_after_thread_sync tcgen05_before_thread_sync tcgen05_cp_warpx4 "
        "tcgen05_gemm mma_gemm_blockscaled tcgen05_gemm_blockscaled tcgen05_gemm_sp "
        "tcgen05_mma tcgen05_mma_arrive tcgen05_mma_blockscaled tcgen05_sf_warp_transpose "
        "wait_wgmma warpgroup_arrive warpgroup_commit_batch warpgroup_fence_operand "
        "warpgroup_wait wgmma_gemm wgmma_gemm_sp wgmma_mma "
    ),
    "pdl": ("pdl_trigger pdl_sync "),
    "print": ("print "),
    "random": ("rng_init rng_rand rng_rand_float "),
    "warpgroup": ("WarpSpecialize WarpSpecializeFrame ws "),
    "cuda_tir": ("mma_fill mma_store ptx_fence_barrier_init ptx_mma_block_scale ptx_wait_barrier "),
}

#: TileLang module group -> the names it exports, in TileLang's order.
TILELANG_NAMES: dict[str, tuple[str, ...]] = {
    group: tuple(names.split()) for group, names in _GROUPS.items()
}
