#include <stdlib.h>
static void* tl_c_alloc_workspace(int device_type, int device_id, uint64_t nbytes,
                                  int dtype_code, int dtype_bits) {
  (void)device_type; (void)device_id; (void)dtype_code; (void)dtype_bits;
  return aligned_alloc(64, (size_t)((nbytes + 63) / 64 * 64 + (nbytes == 0) * 64));
}
static int tl_c_free_workspace(int device_type, int device_id, void* ptr) {
  (void)device_type; (void)device_id;
  free(ptr);
  return 0;
}
