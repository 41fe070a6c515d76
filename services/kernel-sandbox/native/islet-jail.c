/*
 * islet-jail: starts one command under a sandbox mode's kernel profile.
 *
 *   islet-jail --mode read-only|workspace-write|danger-full-access
 *              [--workspace DIR] [--workspace-root DIR] [--scratch DIR] [--read DIR]... [--deny DIR]...
 *              [--chdir DIR] [--rlimit-as BYTES] [--rlimit-nproc N] [--rlimit-fsize BYTES]
 *              [--rlimit-nofile N] [--uid N] [--gid N] [--require full] [--report-fd N]
 *              [--workspace-max-bytes N] [--workspace-max-files N]
 *              [--close-fds] [--test-skip-layer seccomp|landlock]
 *              [--supervise] [--timeout-ms N] -- command args...
 *
 * Layers, in order: rlimits, (as root) a private IPC namespace, hand the scratch/workspace to the
 * target uid and drop to it,
 * PR_SET_NO_NEW_PRIVS, Landlock (file-system rules of the mode, no TCP, scoped signals and abstract
 * unix sockets), the mode's seccomp filter (compiled from profiles/<mode>.json), then execvp.
 * None of these needs a capability, so the same launcher works in a restricted Kubernetes pod.
 *
 * It reports what it applied as one JSON line on --report-fd. With --require full it refuses to
 * start the command when a layer is missing and exits 78 (the engine's sandbox-unavailable).
 *
 * --supervise (implied by --timeout-ms): islet-jail stays as an unjailed parent that is the child
 * subreaper of the command's whole process tree (supervise.h). When the command exits, at the
 * deadline, or on SIGTERM/SIGINT/SIGHUP, it SIGKILLs every process still descending from it
 * (setsid, double fork and re-parenting included: orphans re-parent to the subreaper, never to init)
 * and exits only when none is left. Exit: the command's status; 124 at the deadline; 128+signal when
 * told to stop. Needs no privilege.
 *
 * --workspace-max-bytes / --workspace-max-files (writable workspace): the workspace's limits hold
 * while the command runs, not only after it. RLIMIT_FSIZE becomes at most what is left of the byte
 * budget (no single file can pass it), and the supervisor measures the workspace every few ms and
 * ends the whole tree once it is over either limit (exit 153, 128 + SIGXFSZ, with a line on stderr).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <linux/landlock.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_UNAVAILABLE 78
#define EXIT_USAGE 64
#define EXIT_EXEC 127

struct jail_arg {
  unsigned index;
  enum scmp_compare op;
  uint64_t value, value_two;
};
struct jail_rule {
  const char *name;
  uint32_t action;
  unsigned nargs;
  struct jail_arg args[6];
};
struct jail_fs {
  int root_fs, workspace, scratch, outside; /* 0 none, 1 read, 2 read-write */
};
struct jail_profile {
  const char *mode;
  uint32_t default_action;
  size_t nrules;
  const struct jail_rule *rules;
  const struct jail_fs *fs;
};
#include "profiles.h"

/* Landlock constants newer than Debian 12's kernel headers (the running kernel decides via the ABI). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)
#define LL_RULE_PATH_BENEATH 1

struct ll_ruleset_attr {
  uint64_t handled_access_fs, handled_access_net, scoped;
};
struct ll_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_EXEC LANDLOCK_ACCESS_FS_EXECUTE
#define FS_WRITE                                                                                             \
  (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |          \
   LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |                \
   LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |             \
   LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE)
#define FS_FILE_ONLY                                                                                         \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |               \
   LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define MAX_READ 32
#define MAX_DENY 8
static struct {
  const struct jail_profile *profile;
  const char *workspace, *workspace_root, *scratch, *chdir_to;
  const char *read[MAX_READ];
  int nread;
  /* Never granted, not even by danger-full-access's "everything" (the service's mounted secrets). */
  const char *deny[MAX_DENY];
  int ndeny;
  long long rl_as, rl_nproc, rl_fsize, rl_nofile, ws_max_bytes, ws_max_files;
  long uid, gid;
  int require_full, report_fd, close_fds, skip_seccomp, skip_landlock, supervise;
  long long timeout_ms;
} opt = {.rl_as = -1,
         .rl_nproc = -1,
         .rl_fsize = -1,
         .rl_nofile = -1,
         .ws_max_bytes = -1,
         .ws_max_files = -1,
         .uid = -1,
         .gid = -1,
         .report_fd = -1,
         .timeout_ms = -1};

/* What was applied, for the report. */
static struct {
  int nnp, seccomp, landlock, rlimits, landlock_abi, landlock_net, landlock_scoped, ipc_ns;
  long uid;
  char missing[512], notes[1024];
} st;

static void die(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("islet-jail: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(code);
}

static void appendf(char *buf, size_t cap, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, cap - len, fmt, ap);
  va_end(ap);
}

/* Records a layer that could not be applied; reasons are plain words (no quotes) so the JSON stays valid. */
static void missing(const char *layer, const char *why) {
  appendf(st.missing, sizeof st.missing, "%s\"%s\"", st.missing[0] ? "," : "", layer);
  appendf(st.notes, sizeof st.notes, "%s%s: %s", st.notes[0] ? "; " : "", layer, why);
}

static void report(void);
#include "workspace-budget.h"
#include "supervise.h"

static long long parse_num(const char *flag, const char *v) {
  char *end;
  errno = 0;
  long long n = strtoll(v, &end, 10);
  if (errno || *end || n < 0) die(EXIT_USAGE, "%s expects a non-negative integer, got %s", flag, v);
  return n;
}

static void parse_args(int argc, char **argv, int *cmd_index) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (!strcmp(a, "--close-fds")) {
      opt.close_fds = 1;
      continue;
    }
    if (!strcmp(a, "--supervise")) {
      opt.supervise = 1;
      continue;
    }
    if (i + 1 >= argc) die(EXIT_USAGE, "%s needs a value", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--mode")) {
      for (size_t m = 0; m < sizeof PROFILES / sizeof PROFILES[0]; m++)
        if (!strcmp(PROFILES[m].mode, v)) opt.profile = &PROFILES[m];
      if (!opt.profile) die(EXIT_USAGE, "unknown mode %s (read-only, workspace-write, danger-full-access)", v);
    } else if (!strcmp(a, "--workspace")) opt.workspace = v;
    else if (!strcmp(a, "--workspace-root")) opt.workspace_root = v;
    else if (!strcmp(a, "--scratch")) opt.scratch = v;
    else if (!strcmp(a, "--chdir")) opt.chdir_to = v;
    else if (!strcmp(a, "--read")) {
      if (opt.nread >= MAX_READ) die(EXIT_USAGE, "too many --read paths");
      opt.read[opt.nread++] = v;
    } else if (!strcmp(a, "--deny")) {
      if (opt.ndeny >= MAX_DENY) die(EXIT_USAGE, "too many --deny paths");
      opt.deny[opt.ndeny++] = v;
    } else if (!strcmp(a, "--rlimit-as")) opt.rl_as = parse_num(a, v);
    else if (!strcmp(a, "--rlimit-nproc")) opt.rl_nproc = parse_num(a, v);
    else if (!strcmp(a, "--rlimit-fsize")) opt.rl_fsize = parse_num(a, v);
    else if (!strcmp(a, "--rlimit-nofile")) opt.rl_nofile = parse_num(a, v);
    else if (!strcmp(a, "--workspace-max-bytes")) opt.ws_max_bytes = parse_num(a, v);
    else if (!strcmp(a, "--workspace-max-files")) opt.ws_max_files = parse_num(a, v);
    else if (!strcmp(a, "--uid")) opt.uid = (long)parse_num(a, v);
    else if (!strcmp(a, "--gid")) opt.gid = (long)parse_num(a, v);
    else if (!strcmp(a, "--report-fd")) opt.report_fd = (int)parse_num(a, v);
    else if (!strcmp(a, "--timeout-ms")) {
      opt.timeout_ms = parse_num(a, v);
      opt.supervise = 1;
    }
    else if (!strcmp(a, "--require")) {
      if (strcmp(v, "full") && strcmp(v, "none")) die(EXIT_USAGE, "--require expects full or none");
      opt.require_full = !strcmp(v, "full");
    } else if (!strcmp(a, "--test-skip-layer")) {
      if (!strcmp(v, "seccomp")) opt.skip_seccomp = 1;
      else if (!strcmp(v, "landlock")) opt.skip_landlock = 1;
      else die(EXIT_USAGE, "--test-skip-layer expects seccomp or landlock");
    } else die(EXIT_USAGE, "unknown option %s", a);
  }
  if (!opt.profile) die(EXIT_USAGE, "--mode is required");
  if (i >= argc) die(EXIT_USAGE, "no command given after --");
  *cmd_index = i;
}

static void apply_rlimits(void) {
  struct {
    int res;
    long long v;
  } lims[] = {{RLIMIT_AS, opt.rl_as}, {RLIMIT_NPROC, opt.rl_nproc}, {RLIMIT_FSIZE, opt.rl_fsize},
              {RLIMIT_NOFILE, opt.rl_nofile}, {RLIMIT_CORE, 0}};
  st.rlimits = 1;
  for (size_t i = 0; i < sizeof lims / sizeof lims[0]; i++) {
    if (lims[i].v < 0) continue;
    struct rlimit r = {(rlim_t)lims[i].v, (rlim_t)lims[i].v};
    if (setrlimit(lims[i].res, &r)) {
      st.rlimits = 0;
      missing("rlimits", strerror(errno));
      return;
    }
  }
}

/* SysV IPC objects and POSIX message queues live in the IPC namespace and outlive their creator.
 * The seccomp profile denies them; a namespace of its own (where creating one is permitted: as
 * root, not in a restricted pod) also leaves nothing for another sandbox to find. */
static void private_ipc_namespace(void) {
  if (geteuid() != 0) return;
  if (unshare(CLONE_NEWIPC) == 0) st.ipc_ns = 1;
  else appendf(st.notes, sizeof st.notes, "%sno IPC namespace: %s", st.notes[0] ? "; " : "", strerror(errno));
}

static uid_t chown_uid;
static gid_t chown_gid;
static int chown_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  if (lchown(path, chown_uid, chown_gid)) fprintf(stderr, "islet-jail: lchown %s: %s\n", path, strerror(errno));
  return 0;
}

/* As root: give the writable directories to the target uid, then drop every privilege for good. */
static void drop_root(void) {
  st.uid = (long)getuid();
  if (geteuid() != 0) return;
  uid_t uid = opt.uid >= 0 ? (uid_t)opt.uid : 65534;
  gid_t gid = opt.gid >= 0 ? (gid_t)opt.gid : 65534;
  chown_uid = uid, chown_gid = gid;
  const struct jail_fs *fs = opt.profile->fs;
  if (opt.scratch && fs->scratch == 2) nftw(opt.scratch, chown_one, 16, FTW_PHYS | FTW_MOUNT);
  if (opt.workspace && fs->workspace == 2) nftw(opt.workspace, chown_one, 16, FTW_PHYS | FTW_MOUNT);
  if (setgroups(0, NULL) || setgid(gid) || setuid(uid)) die(EXIT_UNAVAILABLE, "cannot drop root: %s", strerror(errno));
  if (setuid(0) == 0) die(EXIT_UNAVAILABLE, "dropped root but could regain it");
  st.uid = (long)uid;
}

static int ll_ruleset = -1;
static uint64_t ll_handled;

/* Adds "access beneath path"; a missing path is skipped (not every system has /lib32), and so is one
 * the run's uid cannot reach (EACCES: a checkout under a 0700 directory): Landlock only grants, so
 * skipping a grant the uid could not use anyway never widens anything, while failing here would
 * leave the whole Landlock layer (file rules and signal scoping) off. Other errors count. */
static int ll_allow(const char *path, uint64_t access) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT || errno == EACCES ? 0 : -1;
  struct stat sb;
  if (fstat(fd, &sb)) {
    close(fd);
    return -1;
  }
  if (!S_ISDIR(sb.st_mode)) access &= FS_FILE_ONLY;
  struct ll_path_beneath pb = {.allowed_access = access & ll_handled, .parent_fd = fd};
  int rc = pb.allowed_access ? (int)syscall(SYS_landlock_add_rule, ll_ruleset, LL_RULE_PATH_BENEATH, &pb, 0) : 0;
  close(fd);
  return rc;
}

/* Whether `path` is `inner` or one of its ancestors. */
static int is_ancestor_or_same(const char *path, const char *inner) {
  size_t len = strlen(path);
  if (!strcmp(path, "/")) return 1;
  return !strncmp(inner, path, len) && (inner[len] == '/' || inner[len] == 0);
}

/* danger-full-access: everything, except other sessions' workspaces (and the --deny paths). Landlock
 * only grants, so grant each sibling on the way down to an excluded directory and never the directory
 * itself; symlinks are skipped so a link planted by an earlier run cannot pull another tenant's
 * directory into the grant. */
static int ll_allow_all_except(const char *dir, const char *const *excluded, int nexcluded, uint64_t access) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  char path[PATH_MAX];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name);
    struct stat sb;
    if (lstat(path, &sb) || S_ISLNK(sb.st_mode)) continue;
    int same = 0, above = 0;
    for (int i = 0; i < nexcluded; i++) {
      if (!strcmp(path, excluded[i])) same = 1;
      else if (is_ancestor_or_same(path, excluded[i])) above = 1;
    }
    if (same) continue;
    if (above) {
      if (ll_allow_all_except(path, excluded, nexcluded, access)) rc = -1;
    } else if (ll_allow(path, access)) rc = -1;
  }
  closedir(d);
  return rc;
}

/* A --deny path under a path this launch grants would be reachable anyway. Dropping Landlock (and
 * with it every file rule) for such a launch would expose far more than the one path, so the launch
 * is refused, whatever --require says. Returns the grant that contains it, or NULL. */
static const char *contradicting_grant(const char *denied) {
  for (const char *const *p = SYSTEM_READ; *p; p++)
    if (is_ancestor_or_same(*p, denied)) return *p;
  for (int r = 0; r < opt.nread; r++)
    if (is_ancestor_or_same(opt.read[r], denied)) return opt.read[r];
  if (opt.workspace && is_ancestor_or_same(opt.workspace, denied)) return opt.workspace;
  if (opt.scratch && is_ancestor_or_same(opt.scratch, denied)) return opt.scratch;
  return NULL;
}

static void refuse_contradictions(void) {
  char real[PATH_MAX];
  for (int i = 0; i < opt.ndeny; i++) {
    if (!realpath(opt.deny[i], real)) continue;
    const char *grant = contradicting_grant(real);
    if (!grant) continue;
    missing("landlock", "refused: a --deny path lies under a granted path");
    report();
    die(EXIT_UNAVAILABLE, "sandbox-unavailable: refused: --deny %s lies under the granted %s (the grant would expose it)",
        opt.deny[i], grant);
  }
}

static void prepare_landlock(void) {
  if (opt.skip_landlock) return missing("landlock", "skipped by --test-skip-layer");
  int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
  if (abi < 1) return missing("landlock", errno == ENOSYS ? "kernel without Landlock" : "Landlock disabled");
  st.landlock_abi = abi;
  ll_handled = FS_READ | FS_EXEC | FS_WRITE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
  if (abi < 2) ll_handled &= ~LANDLOCK_ACCESS_FS_REFER;
  if (abi < 3) ll_handled &= ~LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi < 5) ll_handled &= ~LANDLOCK_ACCESS_FS_IOCTL_DEV;
  struct ll_ruleset_attr attr = {.handled_access_fs = ll_handled};
  size_t size = sizeof attr.handled_access_fs;
  if (abi >= 4) attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP, size += 8, st.landlock_net = 1;
  if (abi >= 6) attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL, size += 8, st.landlock_scoped = 1;
  ll_ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ll_ruleset < 0) return missing("landlock", "cannot create a ruleset");

  const struct jail_fs *fs = opt.profile->fs;
  uint64_t all = FS_READ | FS_EXEC | FS_WRITE | LANDLOCK_ACCESS_FS_IOCTL_DEV;
  uint64_t rw = FS_READ | FS_WRITE; /* writable places never execute */
  int bad = 0;
  uint64_t sys = fs->root_fs == 2 ? all : FS_READ | FS_EXEC;
  for (const char *const *p = SYSTEM_READ; *p; p++) bad |= ll_allow(*p, sys) != 0;
  for (const char *const *p = DEVICE_RW; *p; p++) bad |= ll_allow(*p, rw | LANDLOCK_ACCESS_FS_IOCTL_DEV) != 0;
  for (const char *const *p = DEVICE_R; *p; p++) bad |= ll_allow(*p, LANDLOCK_ACCESS_FS_READ_FILE) != 0;
  for (int i = 0; i < opt.nread; i++) bad |= ll_allow(opt.read[i], FS_READ | FS_EXEC) != 0;
  if (opt.workspace && fs->workspace) bad |= ll_allow(opt.workspace, fs->workspace == 2 ? rw : FS_READ) != 0;
  if (opt.scratch && fs->scratch) bad |= ll_allow(opt.scratch, fs->scratch == 2 ? rw : FS_READ) != 0;
  static char denied[MAX_DENY][PATH_MAX];
  const char *excluded[MAX_DENY + 1];
  int nexcluded = 0;
  for (int i = 0; i < opt.ndeny; i++) {
    if (!realpath(opt.deny[i], denied[i])) continue; /* nothing there: nothing to wall off */
    excluded[nexcluded++] = denied[i];
  }
  if (fs->outside == 2) {
    char root[PATH_MAX];
    if (opt.workspace_root) {
      /* A root that cannot be resolved must not silently widen the grant to everything. */
      if (!realpath(opt.workspace_root, root)) bad = 1;
      else excluded[nexcluded++] = root;
    } else {
      appendf(st.notes, sizeof st.notes, "%sno --workspace-root: other workspaces are not walled off",
              st.notes[0] ? "; " : "");
    }
    if (!bad) bad |= nexcluded ? ll_allow_all_except("/", excluded, nexcluded, all) != 0 : ll_allow("/", all) != 0;
  }
  if (bad) {
    close(ll_ruleset);
    ll_ruleset = -1;
    return missing("landlock", "cannot add a file-system rule");
  }
}

/* Separate from building the ruleset: rules are added while still root (paths a dropped uid cannot
 * open are still named correctly), the domain is entered after no_new_privs. */
static void enforce_landlock(void) {
  if (ll_ruleset < 0) return;
  if (syscall(SYS_landlock_restrict_self, ll_ruleset, 0)) missing("landlock", "restrict_self failed");
  else st.landlock = 1;
  close(ll_ruleset);
}

static void apply_seccomp(void) {
  if (opt.skip_seccomp) return missing("seccomp", "skipped by --test-skip-layer");
  const struct jail_profile *p = opt.profile;
  scmp_filter_ctx ctx = seccomp_init(p->default_action);
  if (!ctx) return missing("seccomp", "seccomp_init failed");
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0); /* set by us already */
  int unknown = 0;
  for (size_t i = 0; i < p->nrules; i++) {
    const struct jail_rule *r = &p->rules[i];
    int nr = seccomp_syscall_resolve_name(r->name);
    if (nr == __NR_SCMP_ERROR) {
      unknown++; /* a name this libseccomp does not know; runc skips those the same way */
      continue;
    }
    struct scmp_arg_cmp cmp[6];
    for (unsigned a = 0; a < r->nargs; a++)
      cmp[a] = (struct scmp_arg_cmp){r->args[a].index, r->args[a].op, r->args[a].value, r->args[a].value_two};
    int rc = seccomp_rule_add_array(ctx, r->action, nr, r->nargs, cmp);
    if (rc < 0) {
      seccomp_release(ctx);
      return missing("seccomp", "a profile rule was rejected by libseccomp");
    }
  }
  if (unknown) appendf(st.notes, sizeof st.notes, "%s%d syscall names unknown to libseccomp", st.notes[0] ? "; " : "", unknown);
  if (seccomp_load(ctx)) {
    seccomp_release(ctx);
    return missing("seccomp", "the kernel refused the filter");
  }
  seccomp_release(ctx);
  st.seccomp = 1;
}

static void report(void) {
  if (opt.report_fd < 0) return;
  static int done;
  if (done++) return;
  char buf[2048];
  int n = snprintf(buf, sizeof buf,
                   "{\"enforcement\":\"%s\",\"mode\":\"%s\",\"layers\":{\"no_new_privs\":%s,\"seccomp\":%s,"
                   "\"landlock\":%s,\"rlimits\":%s},\"missing\":[%s],\"landlockAbi\":%d,\"landlockNet\":%s,"
                   "\"landlockScoped\":%s,\"ipcNamespace\":%s,\"uid\":%ld,\"notes\":\"%s\"}\n",
                   st.missing[0] ? "partial" : "full", opt.profile->mode, st.nnp ? "true" : "false",
                   st.seccomp ? "true" : "false", st.landlock ? "true" : "false", st.rlimits ? "true" : "false",
                   st.missing, st.landlock_abi, st.landlock_net ? "true" : "false",
                   st.landlock_scoped ? "true" : "false", st.ipc_ns ? "true" : "false", st.uid, st.notes);
  if (n > 0 && write(opt.report_fd, buf, (size_t)n) < 0) fprintf(stderr, "islet-jail: report: %s\n", strerror(errno));
  if (opt.report_fd > 2) close(opt.report_fd); /* the command does not inherit the report channel */
}

int main(int argc, char **argv) {
  int cmd;
  parse_args(argc, argv, &cmd);
  if (opt.report_fd >= 0 && fcntl(opt.report_fd, F_GETFD) < 0) die(EXIT_USAGE, "--report-fd %d is not open", opt.report_fd);
  if (opt.chdir_to && chdir(opt.chdir_to)) die(EXIT_USAGE, "cannot enter %s: %s", opt.chdir_to, strerror(errno));
  refuse_contradictions();
  budget_init();
  /* The supervisor forks here and never returns; everything below runs in the jailed child only. */
  if (opt.supervise) supervise_fork(opt.timeout_ms, opt.report_fd);

  apply_rlimits();
  private_ipc_namespace();
  prepare_landlock();
  drop_root();
  /* After the uid change (which clears it): the command dies with its supervisor. */
  if (opt.supervise) supervised_child_ready();
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) st.nnp = 1;
  else missing("no_new_privs", strerror(errno));
  if (st.nnp) enforce_landlock();
  else if (ll_ruleset >= 0) missing("landlock", "needs no_new_privs");
  /* Seccomp last: everything above needs syscalls the filter may deny (landlock_*, setuid...). */
  if (st.nnp) apply_seccomp();
  else if (!opt.skip_seccomp) missing("seccomp", "needs no_new_privs");

  report();
  if (opt.require_full && st.missing[0]) {
    fprintf(stderr, "islet-jail: sandbox-unavailable: mode %s could not be fully enforced (%s)\n",
            opt.profile->mode, st.notes);
    return EXIT_UNAVAILABLE;
  }
  if (opt.close_fds) syscall(SYS_close_range, 3U, ~0U, 0U);
  execvp(argv[cmd], &argv[cmd]);
  fprintf(stderr, "islet-jail: cannot execute %s: %s\n", argv[cmd], strerror(errno));
  return EXIT_EXEC;
}
