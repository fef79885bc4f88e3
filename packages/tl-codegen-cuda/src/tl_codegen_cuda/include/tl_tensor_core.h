// Tensor-core, ldmatrix and cp.async helpers the CUDA lowering calls.
//
// Every helper is one warp-collective (mma, ldmatrix) or per-thread (cp.async) PTX
// instruction behind a plain function, so the generated kernels read as calls and the
// CPU emulation of the tests can stand in for each of them: it defines
// TL_CUDA_EMULATION before this text and provides its own definitions.
//
// Operand conventions (all pointers are to the calling thread's registers or memory):
//   mma:      c points to the accumulator fragment (updated in place: c = a * b + c),
//             a and b to the A and B operand fragments, each in the PTX ISA's register
//             order for the shape (a0, a1, ... packed two 16-bit or four 8-bit elements
//             per 32-bit register).
//   ldmatrix: regs receives 1, 2 or 4 32-bit registers; smem_row is this lane's row
//             address (lanes 0-7 address matrix 0's rows, 8-15 matrix 1's, ...).
//   cp.async: dst in shared memory, src in global memory; the _zfill forms write zeros
//             and read nothing when valid is 0. tl_cp_async_wait(n) takes a constant.
#ifndef TL_TENSOR_CORE_H
#define TL_TENSOR_CORE_H
#ifndef TL_CUDA_EMULATION

#if defined(__CUDA_ARCH__)
#define TL_SHARED_ADDRESS(p) static_cast<unsigned>(__cvta_generic_to_shared(p))
#endif

#define TL_MMA_4x4x2x4(NAME, PTX, CT)                                                \
  __device__ __forceinline__ void NAME(void* c, const void* a, const void* b) {       \
    TL_MMA_BODY_4x4x2x4(PTX, CT)                                                      \
  }
#if defined(__CUDA_ARCH__)
#define TL_MMA_BODY_4x4x2x4(PTX, CT)                                                  \
    CT* d = static_cast<CT*>(c);                                                      \
    const unsigned* x = static_cast<const unsigned*>(a);                              \
    const unsigned* y = static_cast<const unsigned*>(b);                              \
    asm volatile(PTX " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"      \
                 : "+" TL_MMA_CONSTRAINT_##CT(d[0]), "+" TL_MMA_CONSTRAINT_##CT(d[1]), \
                   "+" TL_MMA_CONSTRAINT_##CT(d[2]), "+" TL_MMA_CONSTRAINT_##CT(d[3])  \
                 : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
#else
#define TL_MMA_BODY_4x4x2x4(PTX, CT)
#endif
#define TL_MMA_CONSTRAINT_float(v) "f"(v)
#define TL_MMA_CONSTRAINT_int(v) "r"(v)

TL_MMA_4x4x2x4(tl_mma_m16n8k16_f32_f16_f16,
               "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", float)
TL_MMA_4x4x2x4(tl_mma_m16n8k16_f32_bf16_bf16,
               "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", float)
TL_MMA_4x4x2x4(tl_mma_m16n8k32_s32_s8_s8,
               "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", int)
TL_MMA_4x4x2x4(tl_mma_m16n8k32_s32_u8_u8,
               "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32", int)
// fp8 operands: sm_89 and newer.
TL_MMA_4x4x2x4(tl_mma_m16n8k32_f32_e4m3_e4m3,
               "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", float)
TL_MMA_4x4x2x4(tl_mma_m16n8k32_f32_e5m2_e5m2,
               "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32", float)

// fp16 accumulators: c holds 4 halves in 2 registers.
__device__ __forceinline__ void tl_mma_m16n8k16_f16_f16_f16(void* c, const void* a,
                                                            const void* b) {
#if defined(__CUDA_ARCH__)
  unsigned* d = static_cast<unsigned*>(c);
  const unsigned* x = static_cast<const unsigned*>(a);
  const unsigned* y = static_cast<const unsigned*>(b);
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
      "{%0,%1};\n"
      : "+r"(d[0]), "+r"(d[1])
      : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]));
#endif
}

__device__ __forceinline__ void tl_ldmatrix_x1(void* regs, const void* smem_row) {
#if defined(__CUDA_ARCH__)
  unsigned* r = static_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0]) : "r"(TL_SHARED_ADDRESS(smem_row)));
#endif
}
__device__ __forceinline__ void tl_ldmatrix_x2(void* regs, const void* smem_row) {
#if defined(__CUDA_ARCH__)
  unsigned* r = static_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(TL_SHARED_ADDRESS(smem_row)));
#endif
}
__device__ __forceinline__ void tl_ldmatrix_x4(void* regs, const void* smem_row) {
#if defined(__CUDA_ARCH__)
  unsigned* r = static_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(TL_SHARED_ADDRESS(smem_row)));
#endif
}
__device__ __forceinline__ void tl_ldmatrix_x1_trans(void* regs, const void* smem_row) {
#if defined(__CUDA_ARCH__)
  unsigned* r = static_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0]) : "r"(TL_SHARED_ADDRESS(smem_row)));
#endif
}
__device__ __forceinline__ void tl_ldmatrix_x2_trans(void* regs, const void* smem_row) {
#if defined(__CUDA_ARCH__)
  unsigned* r = static_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(TL_SHARED_ADDRESS(smem_row)));
#endif
}
__device__ __forceinline__ void tl_ldmatrix_x4_trans(void* regs, const void* smem_row) {
#if defined(__CUDA_ARCH__)
  unsigned* r = static_cast<unsigned*>(regs);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(TL_SHARED_ADDRESS(smem_row)));
#endif
}

// cp.async: .cg (L2 only) for 16 bytes, .ca for 4 and 8 (the only sizes .cg lacks).
#if defined(__CUDA_ARCH__)
#define TL_CP_ASYNC(NAME, CACHE, BYTES)                                                \
  __device__ __forceinline__ void NAME(void* dst, const void* src) {                    \
    asm volatile("cp.async." CACHE ".shared.global [%0], [%1], " #BYTES ";\n"           \
                 :: "r"(TL_SHARED_ADDRESS(dst)), "l"(src) : "memory");                  \
  }                                                                                     \
  __device__ __forceinline__ void NAME##_zfill(void* dst, const void* src, int valid) { \
    int source_bytes = valid ? BYTES : 0;                                               \
    asm volatile("cp.async." CACHE ".shared.global [%0], [%1], " #BYTES ", %2;\n"       \
                 :: "r"(TL_SHARED_ADDRESS(dst)), "l"(src), "r"(source_bytes) : "memory"); \
  }
#else
#define TL_CP_ASYNC(NAME, CACHE, BYTES)                                                \
  __device__ __forceinline__ void NAME(void*, const void*) {}                           \
  __device__ __forceinline__ void NAME##_zfill(void*, const void*, int) {}
#endif
TL_CP_ASYNC(tl_cp_async_16, "cg", 16)
TL_CP_ASYNC(tl_cp_async_8, "ca", 8)
TL_CP_ASYNC(tl_cp_async_4, "ca", 4)

__device__ __forceinline__ void tl_cp_async_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
// Waits until at most n of this thread's committed groups are pending (n: 0..7, a
// constant at every call site, so the switch folds to one instruction).
__device__ __forceinline__ void tl_cp_async_wait(int n) {
#if defined(__CUDA_ARCH__)
  switch (n) {
    case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
    case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
    case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
    case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
    case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
    case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
    default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
#endif
}

#endif  // TL_CUDA_EMULATION
#endif  // TL_TENSOR_CORE_H
