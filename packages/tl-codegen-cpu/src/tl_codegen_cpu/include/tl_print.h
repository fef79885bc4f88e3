/* T.print of a floating-point value (tl_codegen_cpu.passes.lower_tile_ops).

   printf is variadic. TVM's LLVM code generator calls an extern function as a
   non-variadic one, so a double passed to printf directly arrived without the
   variadic calling convention (x86-64 passes the number of vector registers used in
   %al): llvm printed garbage such as 6.14293e-183. The kernel calls this function
   instead, with the format's leading int64 indices (a tile element's, up to 8; fewer
   are ignored) and the value; here printf is called as the variadic function it is.

   TL_PRINT_STORAGE is the functions' storage class (static inline in c sources,
   hidden visibility in the object the llvm path links in). */
#include <stdint.h>
#include <stdio.h>

TL_PRINT_STORAGE int32_t tl_print_f64(const char* format, int32_t count, int64_t i0,
                                      int64_t i1, int64_t i2, int64_t i3, int64_t i4,
                                      int64_t i5, int64_t i6, int64_t i7, double value) {
  switch (count) {
    case 0: return printf(format, value);
    case 1: return printf(format, i0, value);
    case 2: return printf(format, i0, i1, value);
    case 3: return printf(format, i0, i1, i2, value);
    case 4: return printf(format, i0, i1, i2, i3, value);
    case 5: return printf(format, i0, i1, i2, i3, i4, value);
    case 6: return printf(format, i0, i1, i2, i3, i4, i5, value);
    case 7: return printf(format, i0, i1, i2, i3, i4, i5, i6, value);
    default: return printf(format, i0, i1, i2, i3, i4, i5, i6, i7, value);
  }
}
