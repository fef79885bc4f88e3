// CPU stand-ins for every helper of tl_codegen_cuda/include/tl_tensor_core.h (tests only).
//
// cuda_emulation.py places this text after its block-emulation header and before the
// generated source. TL_CUDA_EMULATION makes the generated source skip the device asm
// of tl_tensor_core.h, so these definitions are the only ones.
//
// The models follow the PTX ISA, not the codegen that calls them:
//   * mma.sync m16n8k16 (.f16/.bf16 A and B, .f32 or .f16 C/D) and m16n8k32
//     (.s8/.u8 with .s32, .e4m3/.e5m2 with .f32): fragments as in the sections
//     "Matrix Fragments for mma.m16n8k16 with floating point type" and
//     "Matrix Fragments for mma.m16n8k32" (groupID = laneid >> 2,
//     threadID_in_group = laneid % 4; element i of a fragment lives in register
//     i / (elements per register), lowest bits first).
//   * ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16 ("Warp-level matrix
//     load instruction: ldmatrix"): lanes 8m..8m+7 give the row addresses of matrix m;
//     lane l receives, per matrix, row l/4, elements 2(l%4) and 2(l%4)+1 (with .trans:
//     column l/4 of rows 2(l%4) and 2(l%4)+1), the lower column in the low 16 bits.
//   * cp.async{.ca,.cg}.shared.global with cp.async.commit_group and
//     cp.async.wait_group N ("Data Movement and Conversion Instructions: cp.async",
//     "cp.async.commit_group", "cp.async.wait_group"): deferred, see below.
//
// Warp collectives (mma, ldmatrix, __shfl_xor_sync's warp table, __syncwarp) meet at a
// per-warp std::barrier: each lane writes its operands into its slot of a block-wide
// table, waits for the 31 other lanes, computes its own results from the table, and
// waits again before the slot may be reused. So, as `.sync.aligned` demands of the
// hardware, all 32 lanes of a warp must reach each call (the lowering emits these
// calls outside thread-dependent branches, so every thread of the block reaches
// them); a warp with fewer than 32 threads (a block size not a multiple of 32) is a
// fault. The table is ordered by the barrier, so a missing __syncthreads before an
// ldmatrix of data written by another *warp* can still go unnoticed (it is a race in
// the emulation too, not a guaranteed wrong number).
//
// Numerics: 16-bit and 8-bit float operands are decoded exactly (f16, bf16, e4m3 with
// no infinities and S.1111.111 as NaN, e5m2 IEEE-like with infinities); every product
// is exact in double, the K products and C are summed in double and rounded once to
// the destination: to f32, or to f16 round-to-nearest-even for the .f16 accumulator
// (the ISA leaves the internal precision of the sum to the implementation; this is
// the exact result rounded once, within any test's tolerance of the hardware's).
// Integer mma without .satfinite wraps modulo 2^32 (the sum is taken in uint32).
//
// Faults (a misaligned cp.async or ldmatrix address, a partial warp, a bad wait count)
// do not abort the process: the first is recorded, the emulation goes on, and
// run_emulated raises it after the launch (tl_emulation_error).
#ifndef TL_CUDA_EMULATION_TENSOR_CORE_H
#define TL_CUDA_EMULATION_TENSOR_CORE_H
#define TL_CUDA_EMULATION 1
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdlib>
#include <mutex>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>

static std::atomic<bool> tl_emulation_faulted{false};
static char tl_emulation_fault_text[512];
static void tl_emulation_fault(const char* format, ...) {
  if (tl_emulation_faulted.exchange(true)) return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(tl_emulation_fault_text, sizeof tl_emulation_fault_text, format, args);
  va_end(args);
}
extern "C" const char* tl_emulation_error() {
  return tl_emulation_faulted.load() ? tl_emulation_fault_text : nullptr;
}
extern "C" void tl_emulation_clear_error() { tl_emulation_faulted.store(false); }
// T.device_assert (tl_codegen_cuda's tl_device_assert): a failure is a fault, with the
// message and the failing block and thread.
static inline void tl_device_assert(bool cond, const char* msg) {
  if (!cond) {
    tl_emulation_fault("device assert: %s (block (%u, %u, %u), thread (%u, %u, %u))", msg,
                       blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x, threadIdx.y,
                       threadIdx.z);
  }
}

// ------------------------------------------------------------------ warp meeting point
// A barrier for the lanes of one warp that gives up after a minute (by default): generated code
// that calls a collective on some lanes only would otherwise hang the test run. On a
// timeout the waiting lanes are released and the launch reports a fault.
struct tl_warp_barrier {
  std::mutex mutex;
  std::condition_variable all_arrived;
  unsigned expected, arrived = 0;
  unsigned long long generation = 0;
  explicit tl_warp_barrier(unsigned lanes) : expected(lanes) {}
  static int timeout_seconds() {  // TL_CUDA_EMULATION_WARP_TIMEOUT overrides (tests)
    const char* text = std::getenv("TL_CUDA_EMULATION_WARP_TIMEOUT");
    return text != nullptr && std::atoi(text) > 0 ? std::atoi(text) : 60;
  }
  bool arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex);
    unsigned long long mine = generation;
    if (++arrived == expected) {
      arrived = 0;
      ++generation;
      all_arrived.notify_all();
      return true;
    }
    if (all_arrived.wait_for(lock, std::chrono::seconds(timeout_seconds()),
                             [&] { return generation != mine; }))
      return true;
    arrived = 0;
    ++generation;
    all_arrived.notify_all();
    return false;
  }
};
// One barrier per warp of the running block (set by the launcher), and one slot per
// thread of the block for the operands a warp collective exchanges.
static tl_warp_barrier* tl_warp_barriers[32];
struct tl_warp_slot {
  unsigned a[4];
  unsigned b[2];
  const void* row;
  unsigned long long value;
};
static tl_warp_slot tl_warp_slots[1024];

static inline unsigned tl_lane_id() { return tl_linear_tid() % 32; }
static inline unsigned tl_warp_first_tid() { return tl_linear_tid() / 32 * 32; }
static inline void tl_warp_meet(const char* what) {
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  if (tl_warp_first_tid() + 32 > threads)
    tl_emulation_fault("%s: warp %u of a %u-thread block has fewer than 32 lanes", what,
                       tl_linear_tid() / 32, threads);
  if (!tl_warp_barriers[tl_linear_tid() / 32]->arrive_and_wait())
    tl_emulation_fault("%s: not every lane of warp %u reached it in time (a call on "
                       "some lanes only?)", what, tl_linear_tid() / 32);
}
static inline void __syncwarp(unsigned = 0xffffffffu) { tl_warp_meet("__syncwarp"); }
template <class T> static inline T __shfl_xor_sync(unsigned, T value, int mask, int width = 32) {
  unsigned tid = tl_linear_tid();
  std::memcpy(&tl_warp_slots[tid].value, &value, sizeof(T));
  tl_warp_meet("__shfl_xor_sync");
  unsigned lane = tid % 32;
  unsigned source_lane = lane ^ (unsigned)mask;
  // Lanes outside the caller's width-segment give the caller's own value (PTX shfl.bfly).
  if (source_lane / (unsigned)width != lane / (unsigned)width) source_lane = lane;
  T out;
  std::memcpy(&out, &tl_warp_slots[tl_warp_first_tid() + source_lane].value, sizeof(T));
  tl_warp_meet("__shfl_xor_sync");
  return out;
}

// ------------------------------------------------------------------ element decoding
static inline double tl_decode_f16(uint16_t bits) {
  int sign = bits >> 15, exponent = (bits >> 10) & 31, mantissa = bits & 1023;
  double magnitude;
  if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    magnitude = std::ldexp((double)mantissa, -24);
  else
    magnitude = std::ldexp((double)(1024 + mantissa), exponent - 25);
  return sign ? -magnitude : magnitude;
}
static inline double tl_decode_bf16(uint16_t bits) {
  uint32_t word = (uint32_t)bits << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}
// E4M3 (the ".e4m3" of the ISA, OCP FP8 E4M3FN): bias 7, no infinities, S.1111.111 NaN.
static inline double tl_decode_e4m3(uint8_t bits) {
  int sign = bits >> 7, exponent = (bits >> 3) & 15, mantissa = bits & 7;
  double magnitude;
  if (exponent == 15 && mantissa == 7)
    magnitude = std::numeric_limits<double>::quiet_NaN();
  else if (exponent == 0)
    magnitude = std::ldexp((double)mantissa, -9);
  else
    magnitude = std::ldexp((double)(8 + mantissa), exponent - 10);
  return sign ? -magnitude : magnitude;
}
// E5M2: bias 15, infinities and NaNs as in IEEE binary16.
static inline double tl_decode_e5m2(uint8_t bits) {
  int sign = bits >> 7, exponent = (bits >> 2) & 31, mantissa = bits & 3;
  double magnitude;
  if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<double>::quiet_NaN()
                         : std::numeric_limits<double>::infinity();
  else if (exponent == 0)
    magnitude = std::ldexp((double)mantissa, -16);
  else
    magnitude = std::ldexp((double)(4 + mantissa), exponent - 17);
  return sign ? -magnitude : magnitude;
}
// float -> binary16, round to nearest even (the .f16 accumulator's one rounding).
static inline uint16_t tl_round_to_f16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (magnitude >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520: inf
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal, in units of 2^-24
    float scaled;
    std::memcpy(&scaled, &magnitude, 4);
    return (uint16_t)(sign | (uint32_t)std::nearbyint(scaled * 16777216.0f));
  }
  uint32_t half = ((((magnitude >> 23) - 112u)) << 10) | ((magnitude & 0x7fffffu) >> 13);
  uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) half += 1;
  return (uint16_t)(sign | half);
}

static inline uint16_t tl_half_of(unsigned reg, int which) {
  return (uint16_t)(which ? reg >> 16 : reg & 0xffffu);
}
static inline uint8_t tl_byte_of(unsigned reg, int which) {
  return (uint8_t)(reg >> (8 * which));
}

// ------------------------------------------------------------------ mma fragment maps
// (lane, element) -> (row, column), written from the ISA's formulas. C/D: the same map
// for every m16n8 shape and accumulator type.
struct tl_coord { int row, col; };
static inline tl_coord tl_mma_c_coord(int lane, int i) {
  int group = lane >> 2, in_group = lane % 4;
  return {group + (i >= 2 ? 8 : 0), in_group * 2 + (i & 1)};
}
// m16n8k16, 16-bit A: a0..a7 (row = groupID for i < 2 or 4 <= i < 6, else +8;
// col = threadID_in_group * 2 + (i & 1), +8 for i >= 4).
static inline tl_coord tl_mma_k16_a_coord(int lane, int i) {
  int group = lane >> 2, in_group = lane % 4;
  bool low_row = i < 2 || (i >= 4 && i < 6);
  return {group + (low_row ? 0 : 8), in_group * 2 + (i & 1) + (i >= 4 ? 8 : 0)};
}
// m16n8k16, 16-bit B: b0..b3 (row = threadID_in_group * 2 + (i & 1), +8 for i >= 2;
// col = groupID).
static inline tl_coord tl_mma_k16_b_coord(int lane, int i) {
  int group = lane >> 2, in_group = lane % 4;
  return {in_group * 2 + (i & 1) + (i >= 2 ? 8 : 0), group};
}
// m16n8k32, 8-bit A: a0..a15 (row = groupID for i < 4 or 8 <= i < 12, else +8;
// col = threadID_in_group * 4 + (i & 3), +16 for i >= 8).
static inline tl_coord tl_mma_k32_a_coord(int lane, int i) {
  int group = lane >> 2, in_group = lane % 4;
  bool low_row = i < 4 || (i >= 8 && i < 12);
  return {group + (low_row ? 0 : 8), in_group * 4 + (i & 3) + (i >= 8 ? 16 : 0)};
}
// m16n8k32, 8-bit B: b0..b7 (row = threadID_in_group * 4 + (i & 3), +16 for i >= 4;
// col = groupID).
static inline tl_coord tl_mma_k32_b_coord(int lane, int i) {
  int group = lane >> 2, in_group = lane % 4;
  return {in_group * 4 + (i & 3) + (i >= 4 ? 16 : 0), group};
}

// Gathers the warp's A and B fragments into full matrices (A: 16 x K, B: K x 8) of
// decoded values. kind 16: 16-bit elements (K = 16); kind 8: 8-bit elements (K = 32).
template <int K, class Decode>
static inline void tl_mma_gather(double (&A)[16][32], double (&B)[32][8], Decode decode) {
  unsigned first = tl_warp_first_tid();
  for (int lane = 0; lane < 32; ++lane) {
    const tl_warp_slot& slot = tl_warp_slots[first + lane];
    if (K == 16) {
      for (int i = 0; i < 8; ++i) {
        tl_coord at = tl_mma_k16_a_coord(lane, i);
        A[at.row][at.col] = decode(tl_half_of(slot.a[i / 2], i % 2));
      }
      for (int i = 0; i < 4; ++i) {
        tl_coord at = tl_mma_k16_b_coord(lane, i);
        B[at.row][at.col] = decode(tl_half_of(slot.b[i / 2], i % 2));
      }
    } else {
      for (int i = 0; i < 16; ++i) {
        tl_coord at = tl_mma_k32_a_coord(lane, i);
        A[at.row][at.col] = decode(tl_byte_of(slot.a[i / 4], i % 4));
      }
      for (int i = 0; i < 8; ++i) {
        tl_coord at = tl_mma_k32_b_coord(lane, i);
        B[at.row][at.col] = decode(tl_byte_of(slot.b[i / 4], i % 4));
      }
    }
  }
}

static inline void tl_mma_publish(const void* a, const void* b, const char* what) {
  tl_warp_slot& slot = tl_warp_slots[tl_linear_tid()];
  std::memcpy(slot.a, a, sizeof slot.a);
  std::memcpy(slot.b, b, sizeof slot.b);
  tl_warp_meet(what);
}

// D = A * B + C with f32 accumulators (c: 4 floats, updated in place).
template <int K, class Decode>
static inline void tl_mma_f32(void* c, const void* a, const void* b, Decode decode,
                              const char* what) {
  tl_mma_publish(a, b, what);
  static thread_local double A[16][32], B[32][8];
  tl_mma_gather<K>(A, B, decode);
  float* d = static_cast<float*>(c);
  int lane = (int)tl_lane_id();
  float result[4];
  for (int i = 0; i < 4; ++i) {
    tl_coord at = tl_mma_c_coord(lane, i);
    double sum = d[i];
    for (int k = 0; k < K; ++k) sum += A[at.row][k] * B[k][at.col];
    result[i] = (float)sum;
  }
  tl_warp_meet(what);
  std::memcpy(d, result, sizeof result);
}

static inline void tl_mma_m16n8k16_f32_f16_f16(void* c, const void* a, const void* b) {
  tl_mma_f32<16>(c, a, b, tl_decode_f16, "mma.m16n8k16.f32.f16.f16.f32");
}
static inline void tl_mma_m16n8k16_f32_bf16_bf16(void* c, const void* a, const void* b) {
  tl_mma_f32<16>(c, a, b, tl_decode_bf16, "mma.m16n8k16.f32.bf16.bf16.f32");
}
static inline void tl_mma_m16n8k32_f32_e4m3_e4m3(void* c, const void* a, const void* b) {
  tl_mma_f32<32>(c, a, b, tl_decode_e4m3, "mma.m16n8k32.f32.e4m3.e4m3.f32");
}
static inline void tl_mma_m16n8k32_f32_e5m2_e5m2(void* c, const void* a, const void* b) {
  tl_mma_f32<32>(c, a, b, tl_decode_e5m2, "mma.m16n8k32.f32.e5m2.e5m2.f32");
}

// .f16 accumulators: c holds 4 halves in 2 registers (c0, c1 in the first).
static inline void tl_mma_m16n8k16_f16_f16_f16(void* c, const void* a, const void* b) {
  const char* what = "mma.m16n8k16.f16.f16.f16.f16";
  tl_mma_publish(a, b, what);
  static thread_local double A[16][32], B[32][8];
  tl_mma_gather<16>(A, B, tl_decode_f16);
  unsigned* d = static_cast<unsigned*>(c);
  int lane = (int)tl_lane_id();
  unsigned result[2] = {0, 0};
  for (int i = 0; i < 4; ++i) {
    tl_coord at = tl_mma_c_coord(lane, i);
    double sum = tl_decode_f16(tl_half_of(d[i / 2], i % 2));
    for (int k = 0; k < 16; ++k) sum += A[at.row][k] * B[k][at.col];
    result[i / 2] |= (unsigned)tl_round_to_f16((float)sum) << (16 * (i % 2));
  }
  tl_warp_meet(what);
  std::memcpy(d, result, sizeof result);
}

// Integer mma, .s32 accumulators, no .satfinite: the sum wraps modulo 2^32.
template <bool SIGNED>
static inline void tl_mma_s32_8bit(void* c, const void* a, const void* b, const char* what) {
  tl_mma_publish(a, b, what);
  unsigned first = tl_warp_first_tid();
  static thread_local int32_t A[16][32], B[32][8];
  for (int lane = 0; lane < 32; ++lane) {
    const tl_warp_slot& slot = tl_warp_slots[first + lane];
    for (int i = 0; i < 16; ++i) {
      tl_coord at = tl_mma_k32_a_coord(lane, i);
      uint8_t byte = tl_byte_of(slot.a[i / 4], i % 4);
      A[at.row][at.col] = SIGNED ? (int32_t)(int8_t)byte : (int32_t)byte;
    }
    for (int i = 0; i < 8; ++i) {
      tl_coord at = tl_mma_k32_b_coord(lane, i);
      uint8_t byte = tl_byte_of(slot.b[i / 4], i % 4);
      B[at.row][at.col] = SIGNED ? (int32_t)(int8_t)byte : (int32_t)byte;
    }
  }
  int32_t* d = static_cast<int32_t*>(c);
  int lane = (int)tl_lane_id();
  int32_t result[4];
  for (int i = 0; i < 4; ++i) {
    tl_coord at = tl_mma_c_coord(lane, i);
    uint32_t sum = (uint32_t)d[i];
    for (int k = 0; k < 32; ++k) sum += (uint32_t)(A[at.row][k] * B[k][at.col]);
    result[i] = (int32_t)sum;
  }
  tl_warp_meet(what);
  std::memcpy(d, result, sizeof result);
}
static inline void tl_mma_m16n8k32_s32_s8_s8(void* c, const void* a, const void* b) {
  tl_mma_s32_8bit<true>(c, a, b, "mma.m16n8k32.s32.s8.s8.s32");
}
static inline void tl_mma_m16n8k32_s32_u8_u8(void* c, const void* a, const void* b) {
  tl_mma_s32_8bit<false>(c, a, b, "mma.m16n8k32.s32.u8.u8.s32");
}

// ------------------------------------------------------------------ ldmatrix
// Each row address must be 16-byte aligned (8 contiguous b16 elements).
template <int MATRICES, bool TRANS>
static inline void tl_ldmatrix(void* regs, const void* smem_row, const char* what) {
  unsigned tid = tl_linear_tid(), lane = tid % 32, first = tl_warp_first_tid();
  if (lane < 8u * MATRICES && (reinterpret_cast<uintptr_t>(smem_row) % 16) != 0)
    tl_emulation_fault("%s: lane %u's row address %p is not 16-byte aligned", what, lane,
                       smem_row);
  tl_warp_slots[tid].row = smem_row;
  tl_warp_meet(what);
  unsigned out[MATRICES];
  for (int m = 0; m < MATRICES; ++m) {
    uint16_t low, high;
    if (!TRANS) {
      const uint16_t* row = static_cast<const uint16_t*>(tl_warp_slots[first + 8 * m + lane / 4].row);
      low = row[(lane % 4) * 2];
      high = row[(lane % 4) * 2 + 1];
    } else {
      const uint16_t* row0 =
          static_cast<const uint16_t*>(tl_warp_slots[first + 8 * m + (lane % 4) * 2].row);
      const uint16_t* row1 =
          static_cast<const uint16_t*>(tl_warp_slots[first + 8 * m + (lane % 4) * 2 + 1].row);
      low = row0[lane / 4];
      high = row1[lane / 4];
    }
    out[m] = (unsigned)low | ((unsigned)high << 16);
  }
  tl_warp_meet(what);
  std::memcpy(regs, out, sizeof out);
}
static inline void tl_ldmatrix_x1(void* r, const void* p) { tl_ldmatrix<1, false>(r, p, "ldmatrix.x1"); }
static inline void tl_ldmatrix_x2(void* r, const void* p) { tl_ldmatrix<2, false>(r, p, "ldmatrix.x2"); }
static inline void tl_ldmatrix_x4(void* r, const void* p) { tl_ldmatrix<4, false>(r, p, "ldmatrix.x4"); }
static inline void tl_ldmatrix_x1_trans(void* r, const void* p) { tl_ldmatrix<1, true>(r, p, "ldmatrix.x1.trans"); }
static inline void tl_ldmatrix_x2_trans(void* r, const void* p) { tl_ldmatrix<2, true>(r, p, "ldmatrix.x2.trans"); }
static inline void tl_ldmatrix_x4_trans(void* r, const void* p) { tl_ldmatrix<4, true>(r, p, "ldmatrix.x4.trans"); }

// ------------------------------------------------------------------ cp.async
// Deferred: a copy is queued by the issuing thread and performed (source read,
// destination written) only when a cp.async.wait_group of that thread retires its
// group. Copies not yet committed are never retired by a wait (as in the ISA, which
// waits for committed groups only). So code that reads a stage before waiting for it
// reads what was there before, and the tests see wrong numbers.
struct tl_async_copy {
  void* dst;
  const void* src;  // nullptr: zero-fill (src-size 0), nothing is read
  unsigned bytes;
};
static thread_local std::vector<tl_async_copy> tl_cp_async_open;
static thread_local std::deque<std::vector<tl_async_copy>> tl_cp_async_committed;

template <unsigned BYTES>
static inline void tl_cp_async_issue(void* dst, const void* src, bool valid, const char* what) {
  if (reinterpret_cast<uintptr_t>(dst) % BYTES != 0 ||
      (valid && reinterpret_cast<uintptr_t>(src) % BYTES != 0))
    tl_emulation_fault("%s: dst %p / src %p not %u-byte aligned (thread %u)", what, dst, src,
                       BYTES, tl_linear_tid());
  tl_cp_async_open.push_back({dst, valid ? src : nullptr, BYTES});
}
static inline void tl_cp_async_16(void* d, const void* s) { tl_cp_async_issue<16>(d, s, true, "cp.async 16"); }
static inline void tl_cp_async_8(void* d, const void* s) { tl_cp_async_issue<8>(d, s, true, "cp.async 8"); }
static inline void tl_cp_async_4(void* d, const void* s) { tl_cp_async_issue<4>(d, s, true, "cp.async 4"); }
static inline void tl_cp_async_16_zfill(void* d, const void* s, int valid) {
  tl_cp_async_issue<16>(d, s, valid != 0, "cp.async 16 zfill");
}
static inline void tl_cp_async_8_zfill(void* d, const void* s, int valid) {
  tl_cp_async_issue<8>(d, s, valid != 0, "cp.async 8 zfill");
}
static inline void tl_cp_async_4_zfill(void* d, const void* s, int valid) {
  tl_cp_async_issue<4>(d, s, valid != 0, "cp.async 4 zfill");
}
// commit_group: the open copies (possibly none: an empty group) become one group.
static inline void tl_cp_async_commit() {
  tl_cp_async_committed.push_back(std::move(tl_cp_async_open));
  tl_cp_async_open.clear();
}
// wait_group n: retire the oldest committed groups until at most n remain pending.
// As tl_tensor_core.h's switch, a count above 7 waits as 7 does.
static inline void tl_cp_async_wait(int n) {
  if (n < 0) {
    tl_emulation_fault("cp.async.wait_group %d: the count must be 0..7", n);
    n = 0;
  }
  if (n > 7) n = 7;
  while (tl_cp_async_committed.size() > (size_t)n) {
    for (const tl_async_copy& copy : tl_cp_async_committed.front()) {
      if (copy.src != nullptr)
        std::memcpy(copy.dst, copy.src, copy.bytes);
      else
        std::memset(copy.dst, 0, copy.bytes);
    }
    tl_cp_async_committed.pop_front();
  }
}
#endif  // TL_CUDA_EMULATION_TENSOR_CORE_H
