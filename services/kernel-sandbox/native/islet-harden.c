/*
 * islet-harden: a Node-API addon for the process-wide hardening Node has no API for.
 *   setNonDumpable()  prctl(PR_SET_DUMPABLE, 0): /proc/<pid>/{environ,mem,maps,fd,...} become
 *                     root-owned and ptrace needs CAP_SYS_PTRACE, so a sandboxed process running
 *                     under the same uid (a non-root pod) cannot read this process's memory or
 *                     environment. Reset by execve, hence done in-process, not by a wrapper.
 *   setNoNewPrivs()   prctl(PR_SET_NO_NEW_PRIVS, 1) on the calling thread (inherited by every
 *                     child it starts): nothing started from here gains privileges through a
 *                     set-uid/set-gid binary or file capabilities.
 *   getDumpable(), getNoNewPrivs()  read back what the kernel holds.
 *   setSlice(ns)      sched_setattr on the calling thread: its policy and niceness kept, EEVDF's
 *                     slice request (sched_runtime, Linux >= 6.12) set to ns, 0 = the kernel's
 *                     default. Kept by every thread and child it starts, across execve. Returns 0
 *                     or -errno. Unprivileged for one's own threads (sched-slice.ts, the runner).
 *   getSlice()        the calling thread's slice, ns (sched_getattr), or -errno.
 */
#include <errno.h>
#include <node_api.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static napi_value number(napi_env env, int value) {
  napi_value out;
  napi_create_int32(env, value, &out);
  return out;
}

static napi_value set_non_dumpable(napi_env env, napi_callback_info info) {
  (void)info;
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return number(env, -1);
  return number(env, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
}

static napi_value get_dumpable(napi_env env, napi_callback_info info) {
  (void)info;
  return number(env, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
}

static napi_value set_no_new_privs(napi_env env, napi_callback_info info) {
  (void)info;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return number(env, -1);
  return number(env, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

static napi_value get_no_new_privs(napi_env env, napi_callback_info info) {
  (void)info;
  return number(env, prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
}

/* struct sched_attr (SCHED_ATTR_SIZE_VER1); glibc declares no wrapper before 2.41. */
struct slice_attr {
  uint32_t size, policy;
  uint64_t flags;
  int32_t nice;
  uint32_t priority;
  uint64_t runtime, deadline, period;
  uint32_t util_min, util_max;
};

static int read_attr(struct slice_attr *a) {
  memset(a, 0, sizeof *a);
  return syscall(SYS_sched_getattr, 0, a, sizeof *a, 0) == 0 ? 0 : -errno;
}

static napi_value set_slice(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int64_t ns = -1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_int64(env, argv[0], &ns) != napi_ok || ns < 0)
    return number(env, -EINVAL);
  struct slice_attr a;
  int err = read_attr(&a);
  if (err) return number(env, err);
  /* Fair policies only (SCHED_OTHER 0, SCHED_BATCH 3, SCHED_IDLE 5): a real-time or deadline
     thread's runtime means something else. */
  if (a.policy != 0 && a.policy != 3 && a.policy != 5) return number(env, -EINVAL);
  a.size = sizeof a;
  a.flags = 0;
  a.runtime = (uint64_t)ns;
  a.deadline = 0;
  a.period = 0;
  return number(env, syscall(SYS_sched_setattr, 0, &a, 0) == 0 ? 0 : -errno);
}

static napi_value get_slice(napi_env env, napi_callback_info info) {
  (void)info;
  struct slice_attr a;
  int err = read_attr(&a);
  napi_value out;
  napi_create_int64(env, err ? err : (int64_t)a.runtime, &out);
  return out;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"setNonDumpable", NULL, set_non_dumpable, NULL, NULL, NULL, napi_enumerable, NULL},
      {"getDumpable", NULL, get_dumpable, NULL, NULL, NULL, napi_enumerable, NULL},
      {"setNoNewPrivs", NULL, set_no_new_privs, NULL, NULL, NULL, napi_enumerable, NULL},
      {"getNoNewPrivs", NULL, get_no_new_privs, NULL, NULL, NULL, napi_enumerable, NULL},
      {"setSlice", NULL, set_slice, NULL, NULL, NULL, napi_enumerable, NULL},
      {"getSlice", NULL, get_slice, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
