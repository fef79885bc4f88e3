/* tl-runtime context helper: the four backend symbols a TVM-built CPU library
 * expects its host runtime to supply (libtvm_runtime normally does; under
 * tvm-ffi alone nobody does). Registered through
 * TVMFFIEnvModRegisterContextSymbol before any kernel library is loaded.
 * Built on first use: cc -O2 -fopenmp -shared -fPIC (pthreads without OpenMP). */
#include <stdint.h>
#include <stdlib.h>

typedef struct { void* sync_handle; int32_t num_task; } TLParallelGroupEnv;
typedef int (*TLParallelLambda)(int task_id, TLParallelGroupEnv* penv, void* cdata);

static int g_num_threads = 0;
static volatile int g_last_launch_threads = 0;

void tl_rt_set_num_threads(int n) { g_num_threads = n > 0 ? n : 0; }
int tl_rt_last_launch_threads(void) { return g_last_launch_threads; }

#ifdef _OPENMP
#include <omp.h>
int tl_rt_max_threads(void) { return g_num_threads > 0 ? g_num_threads : omp_get_max_threads(); }
int tl_rt_uses_openmp(void) { return 1; }

int tl_rt_parallel_launch(TLParallelLambda flambda, void* cdata, int num_task) {
  int n = num_task > 0 ? num_task : tl_rt_max_threads();
  int rc = 0, seen = 0;
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
  (void)task_id; (void)penv;
  #pragma omp barrier
  return 0;
}
#else
#include <pthread.h>
#include <unistd.h>
int tl_rt_uses_openmp(void) { return 0; }
int tl_rt_max_threads(void) {
  if (g_num_threads > 0) return g_num_threads;
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

int tl_rt_parallel_launch(TLParallelLambda flambda, void* cdata, int num_task) {
  int n = num_task > 0 ? num_task : tl_rt_max_threads();
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
  for (i = 1; i < n; ++i) {
    if (pthread_create(&threads[i], NULL, tl_rt_run_task, &tasks[i]) != 0) break;
    ++started;
  }
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

int tl_rt_parallel_barrier(int task_id, TLParallelGroupEnv* penv) {
  (void)task_id;
  if (penv && penv->sync_handle) pthread_barrier_wait((pthread_barrier_t*)penv->sync_handle);
  return 0;
}
#endif

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
