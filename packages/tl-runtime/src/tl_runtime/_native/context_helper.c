/* tl-runtime context helper: the four backend symbols a TVM-built CPU library
 * expects its host runtime to supply (libtvm_runtime normally does; under
 * tvm-ffi alone nobody does). Registered through
 * TVMFFIEnvModRegisterContextSymbol before any kernel library is loaded.
 * Built on first use: cc -O2 -fopenmp -pthread -shared -fPIC (pthreads only without OpenMP).
 *
 * Parallel launches use OpenMP when it is available, else a pthread team per launch.
 * A child created by fork() after its parent ran an OpenMP region inherits a runtime
 * whose worker threads do not exist in the child (GNU libgomp then waits forever for
 * them), so after a fork the helper's launches use the pthread team instead (kernels
 * launched through the helper keep running in parallel), and OpenMP's own team size is
 * set to one (kernels with their own OpenMP pragmas run serially in the child). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct { void* sync_handle; int32_t num_task; } TLParallelGroupEnv;
typedef int (*TLParallelLambda)(int task_id, TLParallelGroupEnv* penv, void* cdata);

static int g_num_threads = 0;
/* The stack size of the helper's pthread team threads (0: the process default). Raised by
 * tl_rt_require_stack to what the loaded kernels declare (manifest stack_bytes). */
static volatile size_t g_team_stack_bytes = 0;
static volatile int g_last_launch_threads = 0;
static volatile int g_forked_child = 0;

/* The largest default team (0: none): OMP_NUM_THREADS beyond tl_runtime's bound, lowered
 * (tl_runtime.thread_team.apply_thread_count_env). An OpenMP runtime that read the variable
 * before tl_runtime lowered it would otherwise build a team of that size, and fail. */
static int g_thread_cap = 0;

void tl_rt_set_num_threads(int n) { g_num_threads = n > 0 ? n : 0; }
void tl_rt_set_thread_cap(int n) { g_thread_cap = n > 0 ? n : 0; }
int tl_rt_thread_cap(void) { return g_thread_cap; }
static int tl_rt_capped(int n) { return g_thread_cap > 0 && n > g_thread_cap ? g_thread_cap : n; }
int tl_rt_last_launch_threads(void) { return g_last_launch_threads; }
/* 1 in a process created by fork() after this helper was loaded (see above). */
int tl_rt_is_forked_child(void) { return g_forked_child; }

static void tl_rt_mark_forked_child(void) {
  g_forked_child = 1;
  /* Kernels compiled with their own `#pragma omp parallel` (the c target) call the OpenMP
   * runtime directly: with a team of one it never waits for the missing workers. Looked
   * up by name: the runtime is there whenever such a kernel is (even when this helper was
   * built without OpenMP). */
  void (*set_threads)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");
  if (set_threads) set_threads(1);
}

/* Make the helper's pthread team threads' stacks at least nbytes (never lowers them). */
void tl_rt_require_stack(size_t nbytes) {
  if (nbytes > g_team_stack_bytes) g_team_stack_bytes = nbytes;
}
size_t tl_rt_team_stack_bytes(void) { return g_team_stack_bytes; }

/* The stack size new threads get when nobody sets one (OpenMP workers without
 * OMP_STACKSIZE among them): glibc derives it from RLIMIT_STACK at start-up. */
size_t tl_rt_default_stack_bytes(void) {
  pthread_attr_t attr;
  size_t size = 0;
  if (pthread_getattr_default_np(&attr) != 0) return 0;
  if (pthread_attr_getstacksize(&attr, &size) != 0) size = 0;
  pthread_attr_destroy(&attr);
  return size;
}

/* The lowest usable address of the calling thread's stack, found once per thread. */
static __thread char* t_stack_low = NULL;

/* Bytes of stack left below the caller's frame on the calling thread (0 when unknown).
 * For the main thread glibc reports the stack RLIMIT_STACK allows it to grow to. */
size_t tl_rt_stack_left(void) {
  char here;
  if (!t_stack_low) {
    pthread_attr_t attr;
    void* low = NULL;
    size_t size = 0, guard = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
    if (pthread_attr_getstack(&attr, &low, &size) != 0) low = NULL;
    if (pthread_attr_getguardsize(&attr, &guard) != 0) guard = 0;
    pthread_attr_destroy(&attr);
    if (!low) return 0;
    t_stack_low = (char*)low + guard;
  }
  return &here > t_stack_low ? (size_t)(&here - t_stack_low) : 0;
}

__attribute__((constructor)) static void tl_rt_install_fork_handler(void) {
  pthread_atfork(NULL, NULL, tl_rt_mark_forked_child);
}

static int tl_rt_online_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

typedef struct {
  TLParallelLambda flambda; void* cdata; int task_id; int rc;
  TLParallelGroupEnv env;
} TLTask;

static void* tl_rt_run_task(void* arg) {
  TLTask* t = (TLTask*)arg;
  t->rc = t->flambda(t->task_id, &t->env, t->cdata);
  return NULL;
}

/* One launch on a fresh pthread team of n (the caller is task 0). */
static int tl_rt_pthread_launch(TLParallelLambda flambda, void* cdata, int n) {
  TLTask* tasks = (TLTask*)calloc((size_t)n, sizeof(TLTask));
  pthread_t* threads = (pthread_t*)calloc((size_t)n, sizeof(pthread_t));
  pthread_barrier_t barrier;
  int rc = 0, i, started = 1;
  if (!tasks || !threads) { free(tasks); free(threads); return -1; }
  pthread_barrier_init(&barrier, NULL, (unsigned)n);
  for (i = 0; i < n; ++i) {
    tasks[i].flambda = flambda; tasks[i].cdata = cdata; tasks[i].task_id = i;
    tasks[i].env.sync_handle = &barrier; tasks[i].env.num_task = n;
  }
  pthread_attr_t attr;
  pthread_attr_t* attr_ptr = NULL;
  size_t stack_bytes = g_team_stack_bytes;
  if (stack_bytes > 0 && pthread_attr_init(&attr) == 0) {
    size_t current = 0;
    attr_ptr = &attr;
    /* never below the default: only kernels that need more change anything */
    if (pthread_attr_getstacksize(&attr, &current) == 0 && current < stack_bytes)
      pthread_attr_setstacksize(&attr, stack_bytes);
  }
  for (i = 1; i < n; ++i) {
    if (pthread_create(&threads[i], attr_ptr, tl_rt_run_task, &tasks[i]) != 0) break;
    ++started;
  }
  if (attr_ptr) pthread_attr_destroy(attr_ptr);
  if (started != n) {
    /* could not start the whole team: a barrier would deadlock, so refuse */
    for (i = 1; i < started; ++i) pthread_join(threads[i], NULL);
    pthread_barrier_destroy(&barrier); free(tasks); free(threads);
    return -1;
  }
  tl_rt_run_task(&tasks[0]);
  for (i = 1; i < n; ++i) pthread_join(threads[i], NULL);
  for (i = 0; i < n; ++i) if (tasks[i].rc != 0) rc = tasks[i].rc;
  g_last_launch_threads = n;
  pthread_barrier_destroy(&barrier); free(tasks); free(threads);
  return rc;
}

#ifdef _OPENMP
#include <omp.h>
int tl_rt_uses_openmp(void) { return !g_forked_child; }
int tl_rt_max_threads(void) {
  if (g_num_threads > 0) return g_num_threads;
  return tl_rt_capped(g_forked_child ? tl_rt_online_cpus() : omp_get_max_threads());
}

int tl_rt_parallel_launch(TLParallelLambda flambda, void* cdata, int num_task) {
  int n = num_task > 0 ? num_task : tl_rt_max_threads();
  int rc = 0, seen = 0;
  if (g_forked_child) return tl_rt_pthread_launch(flambda, cdata, n);
  #pragma omp parallel num_threads(n)
  {
    TLParallelGroupEnv env;
    env.sync_handle = NULL;
    /* the lambda splits its range by task_id / num_task: use the team size we got */
    env.num_task = omp_get_num_threads();
    int r = flambda(omp_get_thread_num(), &env, cdata);
    #pragma omp atomic
    seen += 1;
    if (r != 0) {
      #pragma omp atomic write
      rc = r;
    }
  }
  g_last_launch_threads = seen;
  return rc;
}

int tl_rt_parallel_barrier(int task_id, TLParallelGroupEnv* penv) {
  (void)task_id;
  if (penv && penv->sync_handle) {
    pthread_barrier_wait((pthread_barrier_t*)penv->sync_handle);
  } else {
    #pragma omp barrier
  }
  return 0;
}
#else
int tl_rt_uses_openmp(void) { return 0; }
int tl_rt_max_threads(void) {
  return g_num_threads > 0 ? g_num_threads : tl_rt_capped(tl_rt_online_cpus());
}

int tl_rt_parallel_launch(TLParallelLambda flambda, void* cdata, int num_task) {
  int n = num_task > 0 ? num_task : tl_rt_max_threads();
  return tl_rt_pthread_launch(flambda, cdata, n);
}

int tl_rt_parallel_barrier(int task_id, TLParallelGroupEnv* penv) {
  (void)task_id;
  if (penv && penv->sync_handle) pthread_barrier_wait((pthread_barrier_t*)penv->sync_handle);
  return 0;
}
#endif

/* Checked mode (kernels compiled with bounds checks): a kernel that finds an index out
 * of bounds calls tl_rt_report_out_of_bounds instead of touching the memory, and goes on
 * (a parallel region cannot return early). The first report of a call is kept, the rest
 * counted; tl_rt_take_out_of_bounds hands them to Python after the call and clears them.
 * The buffer's name comes packed in four int64 words (up to 32 bytes, little-endian,
 * NUL-padded: TVM's C printer cannot pass a string constant); line is the kernel
 * source's line of the access (0: an access the compiler generated). */
static pthread_mutex_t g_oob_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_oob_name[4], g_oob_index = 0, g_oob_extent = 0, g_oob_count = 0;
static int32_t g_oob_dim = 0, g_oob_line = 0;

int32_t tl_rt_report_out_of_bounds(int64_t name0, int64_t name1, int64_t name2, int64_t name3,
                                   int32_t dim, int64_t index, int64_t extent, int32_t line) {
  pthread_mutex_lock(&g_oob_lock);
  if (g_oob_count++ == 0) {
    g_oob_name[0] = name0; g_oob_name[1] = name1; g_oob_name[2] = name2; g_oob_name[3] = name3;
    g_oob_dim = dim; g_oob_index = index; g_oob_extent = extent; g_oob_line = line;
  }
  pthread_mutex_unlock(&g_oob_lock);
  return 0;
}

/* Copy the first report since the last take out (name: 4 words) and clear the record.
 * Returns how many out-of-bounds accesses were reported (0: none; nothing is written). */
int64_t tl_rt_take_out_of_bounds(int64_t* name, int32_t* dim, int64_t* index, int64_t* extent,
                                 int32_t* line) {
  pthread_mutex_lock(&g_oob_lock);
  int64_t count = g_oob_count;
  if (count) {
    for (int i = 0; i < 4; ++i) name[i] = g_oob_name[i];
    *dim = g_oob_dim; *index = g_oob_index; *extent = g_oob_extent; *line = g_oob_line;
  }
  g_oob_count = 0;
  pthread_mutex_unlock(&g_oob_lock);
  return count;
}

void* tl_rt_alloc_workspace(int device_type, int device_id, uint64_t nbytes, int dtype_code,
                            int dtype_bits) {
  (void)device_type; (void)device_id; (void)dtype_code; (void)dtype_bits;
  void* p = NULL;
  if (posix_memalign(&p, 64, nbytes ? (size_t)nbytes : 1) != 0) return NULL;
  return p;
}

int tl_rt_free_workspace(int device_type, int device_id, void* ptr) {
  (void)device_type; (void)device_id;
  free(ptr);
  return 0;
}
