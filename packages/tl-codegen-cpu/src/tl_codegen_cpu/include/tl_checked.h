/* Checked mode's out-of-bounds report (tl_codegen_cpu.passes.check_bounds calls it).
 *
 * The kernel library defines the slot __tl_rt_report_out_of_bounds, which the loader
 * fills with tl-runtime's recorder (a context symbol registered through
 * TVMFFIEnvModRegisterContextSymbol), so the library names no outside function. Left
 * empty (no tl-runtime helper), a report is dropped: the guard has already kept the
 * access from touching memory. TL_CHECKED_STORAGE is the function's storage class. */
#include <stdint.h>

typedef int32_t (*tl_out_of_bounds_recorder)(int64_t, int64_t, int64_t, int64_t, int32_t,
                                             int64_t, int64_t, int32_t);

__attribute__((visibility("default"))) void* __tl_rt_report_out_of_bounds = 0;

TL_CHECKED_STORAGE int32_t tl_rt_report_out_of_bounds(int64_t name0, int64_t name1,
                                                       int64_t name2, int64_t name3,
                                                       int32_t dim, int64_t index,
                                                       int64_t extent, int32_t line) {
  tl_out_of_bounds_recorder record = (tl_out_of_bounds_recorder)__tl_rt_report_out_of_bounds;
  return record ? record(name0, name1, name2, name3, dim, index, extent, line) : 0;
}
