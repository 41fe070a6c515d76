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
 */
#include <node_api.h>
#include <sys/prctl.h>

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

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"setNonDumpable", NULL, set_non_dumpable, NULL, NULL, NULL, napi_enumerable, NULL},
      {"getDumpable", NULL, get_dumpable, NULL, NULL, NULL, napi_enumerable, NULL},
      {"setNoNewPrivs", NULL, set_no_new_privs, NULL, NULL, NULL, napi_enumerable, NULL},
      {"getNoNewPrivs", NULL, get_no_new_privs, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
