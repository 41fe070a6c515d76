/*
 * islet-jail --workspace-max-bytes / --workspace-max-files: a writable workspace's limits hold while
 * the command runs, not only when the runner measures it afterwards.
 *
 * Two parts, neither needing privilege:
 *  - before the command starts, RLIMIT_FSIZE is lowered to what is left of the byte budget plus the
 *    largest file already there (a file may be rewritten in place, but no single file can carry the
 *    workspace far past its limit; SIGXFSZ / EFBIG at the offset);
 *  - the supervisor (supervise.h) watches the workspace while the command runs: one statfs every few
 *    ms, and a walk of the workspace (directory fds only, never following a symlink, never leaving
 *    its file system) whenever the file system grew by a MiB since the last walk (at most every
 *    BUDGET_MIN_WALK_MS), and at least every BUDGET_WALK_MS (file systems whose statfs lags, e.g. NFS). Over either limit, the whole tree is
 *    killed and islet-jail exits EXIT_WORKSPACE_FULL with a line on stderr.
 * What can still pass the limit is what the tree writes between two checks; the runner's measure
 * after the run then refuses further writes until files are removed.
 *
 * Included once, by islet-jail.c.
 */
#include <sys/statfs.h>
#include <time.h>

#define EXIT_WORKSPACE_FULL (128 + 25) /* as if SIGXFSZ had ended it */
#define BUDGET_POLL_MS 5
#define BUDGET_WALK_MS 200
#define BUDGET_MIN_WALK_MS 10 /* a busy shared volume must not keep the supervisor walking */
#define BUDGET_GROWTH_BYTES (1024ULL * 1024)
#define BUDGET_MAX_DEPTH 64

struct ws_usage {
  unsigned long long bytes, files, dirs, largest;
  int capped;
};

static struct {
  int on, fd;
  dev_t dev;
  unsigned long long fs_used;
  long long last_walk_ms;
  struct ws_usage start, last;
} budget = {.fd = -1};

/* Counts the entries beneath `fd` (consumed) like islet-files does: regular files' bytes, every
 * non-directory as a file. Stops counting once past `stop` entries (over the limit already). */
static void ws_walk(int fd, int depth, struct ws_usage *u, unsigned long long stop) {
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return;
  }
  struct dirent *e;
  while (!u->capped && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    struct stat sb;
    if (fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW)) continue;
    if (S_ISDIR(sb.st_mode)) {
      u->dirs++;
      if (sb.st_dev != budget.dev) continue; /* another file system mounted here: not the workspace's */
      if (depth + 1 >= BUDGET_MAX_DEPTH) {
        u->capped = 1;
        break;
      }
      int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
      if (sub >= 0) ws_walk(sub, depth + 1, u, stop);
    } else {
      u->files++;
      if (S_ISREG(sb.st_mode)) {
        u->bytes += (unsigned long long)sb.st_size;
        if ((unsigned long long)sb.st_size > u->largest) u->largest = (unsigned long long)sb.st_size;
      }
    }
    if (u->files + u->dirs > stop) u->capped = 1;
  }
  closedir(d);
}

static struct ws_usage ws_measure(void) {
  struct ws_usage u = {0};
  unsigned long long stop = opt.ws_max_files >= 0 ? 2ULL * (unsigned long long)opt.ws_max_files + 2 : ~0ULL;
  int fd = openat(budget.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) ws_walk(fd, 0, &u, stop);
  return u;
}

static unsigned long long fs_used_bytes(void) {
  struct statfs sf;
  if (fstatfs(budget.fd, &sf)) return 0;
  return (unsigned long long)(sf.f_blocks - sf.f_bfree) * (unsigned long long)sf.f_bsize;
}

static int ws_over(const struct ws_usage *u) {
  if (u->capped) return 1;
  if (opt.ws_max_bytes >= 0 && u->bytes > (unsigned long long)opt.ws_max_bytes) return 1;
  if (opt.ws_max_files >= 0 &&
      (u->files > (unsigned long long)opt.ws_max_files || u->dirs > (unsigned long long)opt.ws_max_files))
    return 1;
  return 0;
}

static long long budget_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Before the fork: measure once and lower RLIMIT_FSIZE to what the budget leaves for one file. */
static void budget_init(void) {
  if (!opt.workspace || opt.profile->fs->workspace != 2) return;
  if (opt.ws_max_bytes < 0 && opt.ws_max_files < 0) return;
  budget.fd = open(opt.workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat sb;
  if (budget.fd < 0 || fstat(budget.fd, &sb)) die(EXIT_USAGE, "cannot open the workspace %s: %s", opt.workspace, strerror(errno));
  budget.dev = sb.st_dev;
  budget.on = 1;
  budget.last = budget.start = ws_measure();
  budget.fs_used = fs_used_bytes();
  budget.last_walk_ms = budget_now_ms();
  if (opt.ws_max_bytes >= 0) {
    unsigned long long max = (unsigned long long)opt.ws_max_bytes;
    unsigned long long left = budget.last.bytes >= max ? 0 : max - budget.last.bytes;
    unsigned long long cap = left + budget.last.largest;
    if (opt.rl_fsize < 0 || (unsigned long long)opt.rl_fsize > cap) opt.rl_fsize = (long long)cap;
  }
}

/* In the supervisor, between waits: whether the workspace is now over a limit. */
static int budget_exceeded(void) {
  if (!budget.on) return 0;
  long long now = budget_now_ms();
  unsigned long long used = fs_used_bytes();
  int grew = used >= budget.fs_used + BUDGET_GROWTH_BYTES;
  long long since = now - budget.last_walk_ms;
  if (since < BUDGET_MIN_WALK_MS || (!grew && since < BUDGET_WALK_MS)) return 0;
  budget.last = ws_measure();
  budget.fs_used = used;
  budget.last_walk_ms = now;
  return ws_over(&budget.last);
}

/* Once the command has ended: whether it left the workspace over a limit that it grew past. A command
 * that ends between two of the supervisor's looks (an EFBIG caught, a last burst) fails all the same;
 * one that only read a workspace that was already over is not blamed for it. */
static int budget_exceeded_at_end(void) {
  if (!budget.on) return 0;
  struct ws_usage u = ws_measure();
  if (!ws_over(&u)) return 0;
  if (!u.capped && u.bytes <= budget.start.bytes && u.files <= budget.start.files && u.dirs <= budget.start.dirs) return 0;
  budget.last = u;
  return 1;
}

static void budget_report_stop(void) {
  fprintf(stderr,
          "islet-jail: the workspace passed its limit while the program ran (%llu bytes in %llu files; "
          "the limit is %lld bytes, %lld files); the program was stopped\n",
          budget.last.bytes, budget.last.files, opt.ws_max_bytes, opt.ws_max_files);
}
