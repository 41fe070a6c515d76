/*
 * islet-files: every workspace file operation, resolved by the kernel beneath a directory fd.
 *
 *   islet-files <workspace-root>      (long-lived; framed requests on stdin, answers on stdout)
 *
 * Why: the platform runs as root and tenants can change their own workspace (skills, programs).
 * A path checked with lstat/realpath and then opened by name loses the race against a
 * directory<->symlink swap (renameat2 RENAME_EXCHANGE). Here every name is resolved with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV relative to an
 * fd, one step at a time for anything that creates, renames or removes, and walks use fds only.
 * Only regular files and directories are served: files are opened O_NONBLOCK|O_NOFOLLOW and
 * fstat'ed before a byte is read, so a FIFO, socket or device is refused without ever blocking.
 * Defence in depth: the process confines itself with Landlock to the workspace root (so even a
 * resolution bug cannot reach /proc/self/environ or the host) and has an empty environment.
 *
 * Request:  u32 len | u8 op | u64 n1 | u64 n2 | u64 n3 | u16 len + ws | u16 len + path
 *           | u16 len + path2 | data...            (little endian; ws = "tenant/session" or ".")
 * Answer:   u32 len | u8 status | payload         (status 0 = ok, else an error code + message)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { OP_READ = 1, OP_WRITE, OP_LIST, OP_STAT, OP_REMOVE, OP_RENAME, OP_MKDIR, OP_USAGE, OP_DROP, OP_ENSURE };
/* Stable codes, mirrored in src/files-helper.ts. */
enum {
  ST_OK = 0,
  ST_INVALID_PATH,
  ST_OUTSIDE,
  ST_NOT_FOUND,
  ST_IS_DIRECTORY,
  ST_TOO_LARGE,
  ST_FULL,
  ST_UNSUPPORTED_TYPE,
  ST_IO,
  ST_BUSY,
};

#define MAX_FRAME (256u << 20)
#define MAX_DEPTH 64        /* list / usage walks */
#define MAX_DROP_DEPTH 256  /* rm -r */
#define MAX_WALK_ENTRIES 1000000
#define LOCK_WAIT_MS 2000
#define TMP_PREFIX ".islet-tmp-"
#define RESOLVE_FLAGS (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

static int root_fd = -1;

/* ---- growable answer buffer ---- */
struct buf {
  unsigned char *p;
  size_t len, cap;
};
static struct buf out;

static void need(struct buf *b, size_t n) {
  if (b->len + n <= b->cap) return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + n) cap *= 2;
  b->p = realloc(b->p, cap);
  if (!b->p) _exit(70);
  b->cap = cap;
}
static void put(struct buf *b, const void *p, size_t n) {
  need(b, n);
  memcpy(b->p + b->len, p, n);
  b->len += n;
}
static void put_u8(struct buf *b, uint8_t v) { put(b, &v, 1); }
static void put_u16(struct buf *b, uint16_t v) { put(b, &v, 2); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, 8); }

/* An error answer replaces whatever was being built. */
static int fail(int status, const char *fmt, ...) {
  out.len = 0;
  put_u8(&out, (uint8_t)status);
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  put(&out, msg, n < 0 ? 0 : (size_t)n >= sizeof msg ? sizeof msg - 1 : (size_t)n);
  return status;
}

static int fail_errno(int err, const char *what) {
  switch (err) {
    case ELOOP:
    case EXDEV:
      return fail(ST_OUTSIDE, "path goes through a symlink or leaves the workspace: %s", what);
    case ENOENT:
      return fail(ST_NOT_FOUND, "no such file: %s", what);
    case ENOTDIR:
      return fail(ST_NOT_FOUND, "not a directory on the way: %s", what);
    case EISDIR:
      return fail(ST_IS_DIRECTORY, "is a directory: %s", what);
    case ENXIO:
      return fail(ST_UNSUPPORTED_TYPE, "not a regular file or directory: %s", what);
    case ENAMETOOLONG:
      return fail(ST_INVALID_PATH, "invalid path: a name is too long: %s", what);
    case ENOSPC:
    case EDQUOT:
      return fail(ST_FULL, "no space left on the volume: %s", what);
    case ENOTEMPTY:
    case EEXIST:
      return fail(ST_IS_DIRECTORY, "a non-empty directory is in the way: %s", what);
    default:
      return fail(ST_IO, "%s: %s", what, strerror(err));
  }
}

/* ---- resolution ---- */
static int beneath(int dirfd, const char *path, uint64_t flags) {
  struct open_how how = {.flags = flags | O_CLOEXEC, .mode = 0, .resolve = RESOLVE_FLAGS};
  if (!(flags & O_PATH)) how.flags |= O_NOFOLLOW | O_NOCTTY;
  for (int i = 0; i < 64; i++) {
    int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
    /* EAGAIN: a rename raced the lookup; the kernel refuses rather than risk an escape. Retry. */
    if (fd >= 0 || errno != EAGAIN) return fd;
  }
  errno = EAGAIN;
  return -1;
}

/* A relative path of plain names: no leading '/', no '..', no empty result. '.' segments are fine. */
static int valid_rel(const char *p) {
  if (!*p || *p == '/') return 0;
  const char *s = p;
  while (*s) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.') return 0;
    if (n > 255) return 0;
    s += n;
    while (*s == '/') s++;
  }
  return 1;
}
static int valid_name(const char *n) {
  return *n && strcmp(n, ".") && strcmp(n, "..") && !strchr(n, '/') && strlen(n) <= 255;
}

/* The workspace directory as an O_PATH fd, beneath the root. */
static int open_ws(const char *ws) {
  if (!valid_rel(ws)) return errno = EINVAL, -1;
  return beneath(root_fd, ws, O_PATH | O_DIRECTORY);
}

/* Splits `path` (copied into `tmp`) into its parent (or ".") and final name. */
static int split(const char *path, char *tmp, size_t cap, const char **parent, const char **name) {
  if (strlen(path) >= cap) return -1;
  strcpy(tmp, path);
  size_t n = strlen(tmp);
  while (n > 1 && tmp[n - 1] == '/') tmp[--n] = 0;
  char *slash = strrchr(tmp, '/');
  if (slash) {
    *slash = 0;
    *parent = tmp;
    *name = slash + 1;
  } else {
    *parent = ".";
    *name = tmp;
  }
  return valid_name(*name) ? 0 : -1;
}

/* mkdir -p, one component at a time, each opened beneath the previous fd. Returns an O_PATH dir fd. */
static int mkdirs(int base, const char *rel, mode_t mode) {
  char tmp[4096];
  if (strlen(rel) >= sizeof tmp) return errno = ENAMETOOLONG, -1;
  strcpy(tmp, rel);
  int cur = dup(base);
  if (cur < 0) return -1;
  for (char *s = strtok(tmp, "/"); s; s = strtok(NULL, "/")) {
    if (!strcmp(s, ".")) continue;
    int next = beneath(cur, s, O_PATH | O_DIRECTORY);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(cur, s, mode) && errno != EEXIST) {
        int e = errno;
        close(cur);
        return errno = e, -1;
      }
      next = beneath(cur, s, O_PATH | O_DIRECTORY);
    }
    int e = errno;
    close(cur);
    if (next < 0) return errno = e, -1;
    cur = next;
  }
  return cur;
}

static uint64_t mtime_ms(const struct stat *sb) {
  return (uint64_t)sb->st_mtim.tv_sec * 1000u + (uint64_t)sb->st_mtim.tv_nsec / 1000000u;
}

/* ---- walks (fds only) ---- */
struct entry {
  char *name;
  char *key; /* name, plus '/' for directories: sorting keys sorts full paths */
  struct stat sb;
};
static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

/* Reads a directory (an fd we own; consumed) into sorted entries, lstat'ed relative to it. */
static struct entry *read_dir(int fd, size_t *count, int *dirfd_out) {
  int keep = dup(fd);
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    if (keep >= 0) close(keep);
    return NULL;
  }
  size_t n = 0, cap = 16;
  struct entry *es = malloc(cap * sizeof *es);
  struct dirent *e;
  while (es && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    struct stat sb;
    if (fstatat(keep, e->d_name, &sb, AT_SYMLINK_NOFOLLOW)) continue;
    if (n == cap) es = realloc(es, (cap *= 2) * sizeof *es);
    if (!es) break;
    size_t l = strlen(e->d_name);
    es[n].name = strdup(e->d_name);
    es[n].key = malloc(l + 2);
    memcpy(es[n].key, e->d_name, l);
    es[n].key[l] = S_ISDIR(sb.st_mode) ? '/' : 0;
    es[n].key[l + 1] = 0;
    es[n].sb = sb;
    n++;
  }
  closedir(d);
  if (!es) {
    close(keep);
    return NULL;
  }
  qsort(es, n, sizeof *es, cmp_entry);
  *count = n;
  *dirfd_out = keep;
  return es;
}
static void free_entries(struct entry *es, size_t n) {
  for (size_t i = 0; i < n; i++) free(es[i].name), free(es[i].key);
  free(es);
}

struct usage {
  uint64_t bytes, files, dirs;
  int capped;
};

/* Counts every entry beneath `fd` (consumed): regular files' bytes, non-directories as files. */
static void walk_usage(int fd, int depth, struct usage *u) {
  size_t n;
  int dfd;
  struct entry *es = read_dir(fd, &n, &dfd);
  if (!es) return;
  for (size_t i = 0; i < n && !u->capped; i++) {
    if (u->files + u->dirs >= MAX_WALK_ENTRIES) {
      u->capped = 1;
      break;
    }
    if (S_ISDIR(es[i].sb.st_mode)) {
      u->dirs++;
      if (depth + 1 >= MAX_DEPTH) {
        u->capped = 1;
        break;
      }
      int sub = beneath(dfd, es[i].name, O_RDONLY | O_DIRECTORY);
      if (sub >= 0) walk_usage(sub, depth + 1, u);
    } else {
      u->files++;
      if (S_ISREG(es[i].sb.st_mode)) u->bytes += (uint64_t)es[i].sb.st_size;
    }
  }
  free_entries(es, n);
  close(dfd);
}

struct lister {
  const char *cursor; /* list paths strictly after this one ("" = from the start) */
  uint64_t limit, emitted;
  int more;
  char path[8192];
};

static void emit(struct lister *l, const char *path, const struct stat *sb) {
  if (l->emitted == l->limit) {
    l->more = 1;
    return;
  }
  size_t n = strlen(path);
  put_u64(&out, (uint64_t)sb->st_size);
  put_u64(&out, mtime_ms(sb));
  put_u16(&out, (uint16_t)n);
  put(&out, path, n);
  l->emitted++;
}

/* Regular files beneath `fd` (consumed) in path order; `plen` = length of the prefix in l->path. */
static void walk_list(int fd, size_t plen, int depth, struct lister *l) {
  size_t n;
  int dfd;
  struct entry *es = read_dir(fd, &n, &dfd);
  if (!es) return;
  for (size_t i = 0; i < n && !l->more; i++) {
    size_t kl = strlen(es[i].key);
    if (plen + kl + 1 >= sizeof l->path || plen + kl > 4096) continue;
    memcpy(l->path + plen, es[i].key, kl + 1);
    if (S_ISDIR(es[i].sb.st_mode)) {
      /* Skip a subtree whose every path sorts before the cursor. */
      if (strcmp(l->path, l->cursor) < 0 && strncmp(l->cursor, l->path, plen + kl)) continue;
      if (depth + 1 >= MAX_DEPTH) continue;
      int sub = beneath(dfd, es[i].name, O_RDONLY | O_DIRECTORY);
      if (sub >= 0) walk_list(sub, plen + kl, depth + 1, l);
    } else if (S_ISREG(es[i].sb.st_mode) && strcmp(l->path, l->cursor) > 0 &&
               strncmp(es[i].name, TMP_PREFIX, sizeof TMP_PREFIX - 1)) { /* not a write in flight */
      emit(l, l->path, &es[i].sb);
    }
  }
  l->path[plen] = 0;
  free_entries(es, n);
  close(dfd);
}

/* rm -r of the contents of `fd` (consumed). */
static int remove_tree(int fd, int depth) {
  size_t n;
  int dfd, rc = 0;
  struct entry *es = read_dir(fd, &n, &dfd);
  if (!es) return -1;
  for (size_t i = 0; i < n; i++) {
    if (S_ISDIR(es[i].sb.st_mode)) {
      if (depth + 1 >= MAX_DROP_DEPTH) {
        rc = -1;
        continue;
      }
      int sub = beneath(dfd, es[i].name, O_RDONLY | O_DIRECTORY);
      if (sub < 0 || remove_tree(sub, depth + 1) || unlinkat(dfd, es[i].name, AT_REMOVEDIR)) rc = -1;
    } else if (unlinkat(dfd, es[i].name, 0) && errno != ENOENT) {
      rc = -1;
    }
  }
  free_entries(es, n);
  close(dfd);
  return rc;
}

/* ---- operations ---- */
struct req {
  uint8_t op;
  uint64_t n1, n2, n3;
  char ws[4097], path[4097], path2[4097];
  const unsigned char *data;
  size_t data_len;
};

static int op_read(const struct req *r, int wsfd) {
  /* Look before opening for reading, so a device node is not even opened (its open may act); the
   * fstat after the real open (O_NONBLOCK: a FIFO never blocks it) is the check that counts. */
  struct stat sb;
  int pfd = beneath(wsfd, r->path, O_PATH);
  if (pfd < 0) return fail_errno(errno, r->path);
  int prc = fstat(pfd, &sb);
  close(pfd);
  if (prc) return fail_errno(errno, r->path);
  if (S_ISDIR(sb.st_mode)) return fail(ST_IS_DIRECTORY, "is a directory: %s", r->path);
  if (!S_ISREG(sb.st_mode)) return fail(ST_UNSUPPORTED_TYPE, "not a regular file or directory: %s", r->path);
  int fd = beneath(wsfd, r->path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) return fail_errno(errno, r->path);
  if (fstat(fd, &sb)) {
    close(fd);
    return fail_errno(errno, r->path);
  }
  if (S_ISDIR(sb.st_mode)) return close(fd), fail(ST_IS_DIRECTORY, "is a directory: %s", r->path);
  if (!S_ISREG(sb.st_mode))
    return close(fd), fail(ST_UNSUPPORTED_TYPE, "not a regular file or directory: %s", r->path);
  if ((uint64_t)sb.st_size > r->n1)
    return close(fd), fail(ST_TOO_LARGE, "file is larger than %llu bytes: %s", (unsigned long long)r->n1, r->path);
  out.len = 0;
  put_u8(&out, ST_OK);
  size_t start = out.len;
  for (;;) {
    need(&out, 65536);
    ssize_t got = read(fd, out.p + out.len, 65536);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return close(fd), fail_errno(errno, r->path);
    if (got == 0) break;
    out.len += (size_t)got;
    if (out.len - start > r->n1) /* grew while we read */
      return close(fd), fail(ST_TOO_LARGE, "file is larger than %llu bytes: %s", (unsigned long long)r->n1, r->path);
  }
  close(fd);
  return ST_OK;
}

static int lock_for(const char *ws) {
  /* The lock lives on the workspace's parent (the tenant's directory), which tenant code cannot open
   * (Landlock), so a tenant cannot hold it to stall writers. A bare root workspace locks the root. */
  char tmp[4097];
  const char *parent = ".", *name;
  if (strcmp(ws, ".") && split(ws, tmp, sizeof tmp, &parent, &name)) return errno = EINVAL, -1;
  int fd = beneath(root_fd, parent, O_RDONLY | O_DIRECTORY);
  if (fd < 0) return -1;
  for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB); waited += 5) {
    if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS) {
      close(fd);
      return errno = EWOULDBLOCK, -1;
    }
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);
  }
  return fd;
}

static unsigned long tmp_counter;

/* n1 = max file bytes, n2 = max workspace bytes, n3 = max files. Reserve under the lock, then write. */
static int op_write(const struct req *r, int wsfd) {
  char tmp[4097];
  const char *parent, *name;
  if (split(r->path, tmp, sizeof tmp, &parent, &name)) return fail(ST_INVALID_PATH, "invalid path: %s", r->path);
  if (r->data_len > r->n1)
    return fail(ST_TOO_LARGE, "file is larger than %llu bytes", (unsigned long long)r->n1);
  /* Reserve first (lock, measure, check), create missing directories only then: a refused write
   * leaves nothing behind, and directories count against the limit like files. */
  int lock = lock_for(r->ws);
  if (lock < 0) return fail(ST_BUSY, "the workspace is busy; try again");
  int rc = ST_OK;
  struct stat sb;
  uint64_t existing = 0, new_dirs = 0;
  int exists = 0;
  int pfd = beneath(wsfd, parent, O_PATH | O_DIRECTORY);
  if (pfd < 0 && errno != ENOENT) rc = fail_errno(errno, r->path);
  if (pfd < 0)
    for (const char *c = parent; *c; c++) new_dirs += (c == parent || c[-1] == '/') && *c != '/';
  if (rc == ST_OK && pfd >= 0 && fstatat(pfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(sb.st_mode)) rc = fail(ST_OUTSIDE, "path is a symlink: %s", r->path);
    else if (S_ISDIR(sb.st_mode)) rc = fail(ST_IS_DIRECTORY, "is a directory: %s", r->path);
    else if (!S_ISREG(sb.st_mode)) rc = fail(ST_UNSUPPORTED_TYPE, "not a regular file or directory: %s", r->path);
    exists = 1;
    existing = (uint64_t)sb.st_size;
  }
  if (rc == ST_OK) {
    struct usage u = {0};
    int all = beneath(wsfd, ".", O_RDONLY | O_DIRECTORY);
    if (all >= 0) walk_usage(all, 0, &u);
    uint64_t used = u.bytes - (existing < u.bytes ? existing : u.bytes);
    if (u.capped || used + r->data_len > r->n2)
      rc = fail(ST_FULL, "the workspace would exceed %llu bytes", (unsigned long long)r->n2);
    else if ((!exists && u.files >= r->n3) || u.files > r->n3 || u.dirs + new_dirs > r->n3)
      rc = fail(ST_FULL, "the workspace already holds %llu files", (unsigned long long)r->n3);
  }
  if (rc == ST_OK && pfd < 0) {
    pfd = mkdirs(wsfd, parent, 0755);
    if (pfd < 0) rc = fail_errno(errno, r->path);
  }
  if (rc == ST_OK) {
    char tname[64];
    snprintf(tname, sizeof tname, TMP_PREFIX "%d-%lu", (int)getpid(), ++tmp_counter);
    int fd = openat(pfd, tname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) rc = fail_errno(errno, r->path);
    else {
      size_t off = 0;
      while (off < r->data_len) {
        ssize_t w = write(fd, r->data + off, r->data_len - off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) break;
        off += (size_t)w;
      }
      int e = errno;
      close(fd);
      if (off < r->data_len) rc = fail_errno(e, r->path);
      else if (renameat(pfd, tname, pfd, name)) rc = fail_errno(errno, r->path);
      if (rc != ST_OK) unlinkat(pfd, tname, 0);
    }
  }
  if (rc == ST_OK) {
    out.len = 0;
    put_u8(&out, ST_OK);
    put_u64(&out, r->data_len);
    put_u64(&out, (uint64_t)time(NULL) * 1000u);
  }
  close(lock);
  if (pfd >= 0) close(pfd);
  return rc;
}

/* path = prefix ("" = all), path2 = cursor, n1 = limit. */
static int op_list(const struct req *r, int wsfd) {
  static struct lister l;
  memset(&l, 0, sizeof l);
  l.cursor = r->path2;
  l.limit = r->n1;
  out.len = 0;
  put_u8(&out, ST_OK);
  put_u8(&out, 0); /* "more", patched below */
  if (!*r->path) {
    int fd = beneath(wsfd, ".", O_RDONLY | O_DIRECTORY);
    if (fd < 0) return fail_errno(errno, "workspace");
    walk_list(fd, 0, 0, &l);
  } else {
    /* O_PATH first: a prefix naming a FIFO or device is never opened for reading. */
    int fd = beneath(wsfd, r->path, O_PATH);
    if (fd < 0) return errno == ENOENT || errno == ENOTDIR ? ST_OK : fail_errno(errno, r->path);
    struct stat sb;
    if (fstat(fd, &sb)) return close(fd), fail_errno(errno, r->path);
    size_t plen = strlen(r->path);
    if (plen + 2 > sizeof l.path) return close(fd), fail(ST_INVALID_PATH, "prefix too long");
    if (S_ISREG(sb.st_mode) && strcmp(r->path, l.cursor) > 0) emit(&l, r->path, &sb);
    if (S_ISDIR(sb.st_mode)) {
      int dfd = beneath(fd, ".", O_RDONLY | O_DIRECTORY);
      if (dfd >= 0) {
        memcpy(l.path, r->path, plen);
        l.path[plen] = '/';
        l.path[plen + 1] = 0;
        walk_list(dfd, plen + 1, 0, &l);
      }
    }
    close(fd);
  }
  out.p[1] = (uint8_t)l.more;
  return ST_OK;
}

static int op_stat(const struct req *r, int wsfd) {
  int fd = beneath(wsfd, *r->path ? r->path : ".", O_PATH);
  if (fd < 0) return fail_errno(errno, r->path);
  struct stat sb;
  int rc = fstat(fd, &sb);
  close(fd);
  if (rc) return fail_errno(errno, r->path);
  out.len = 0;
  put_u8(&out, ST_OK);
  put_u8(&out, S_ISREG(sb.st_mode) ? 1 : S_ISDIR(sb.st_mode) ? 2 : 3);
  put_u64(&out, (uint64_t)sb.st_size);
  put_u64(&out, mtime_ms(&sb));
  return ST_OK;
}

static int op_remove(const struct req *r, int wsfd) {
  char tmp[4097];
  const char *parent, *name;
  if (split(r->path, tmp, sizeof tmp, &parent, &name)) return fail(ST_INVALID_PATH, "invalid path: %s", r->path);
  int pfd = beneath(wsfd, parent, O_PATH | O_DIRECTORY);
  uint8_t removed = 0;
  if (pfd < 0) {
    if (errno != ENOENT && errno != ENOTDIR) return fail_errno(errno, r->path);
  } else {
    struct stat sb;
    if (fstatat(pfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISDIR(sb.st_mode)) return close(pfd), fail(ST_IS_DIRECTORY, "is a directory: %s", r->path);
      /* unlinkat removes a symlink or special file itself, never a target */
      if (unlinkat(pfd, name, 0) == 0) removed = 1;
      else if (errno != ENOENT) return close(pfd), fail_errno(errno, r->path);
    }
    close(pfd);
  }
  out.len = 0;
  put_u8(&out, ST_OK);
  put_u8(&out, removed);
  return ST_OK;
}

static int op_rename(const struct req *r, int wsfd) {
  char t1[4097], t2[4097];
  const char *p1, *n1, *p2, *n2;
  if (split(r->path, t1, sizeof t1, &p1, &n1) || split(r->path2, t2, sizeof t2, &p2, &n2))
    return fail(ST_INVALID_PATH, "invalid path");
  int from = beneath(wsfd, p1, O_PATH | O_DIRECTORY);
  if (from < 0) return fail_errno(errno, r->path);
  int to = mkdirs(wsfd, p2, 0755);
  if (to < 0) return close(from), fail_errno(errno, r->path2);
  struct stat sb;
  int rc = ST_OK;
  if (fstatat(from, n1, &sb, AT_SYMLINK_NOFOLLOW)) rc = fail_errno(errno, r->path);
  else if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
    rc = fail(ST_UNSUPPORTED_TYPE, "not a regular file or directory: %s", r->path);
  else if (renameat(from, n1, to, n2)) rc = fail_errno(errno, r->path2);
  close(from);
  close(to);
  if (rc == ST_OK) out.len = 0, put_u8(&out, ST_OK);
  return rc;
}

static int op_mkdir(const struct req *r, int base) {
  int fd = mkdirs(base, r->path, 0755);
  if (fd < 0) return fail_errno(errno, r->path);
  close(fd);
  out.len = 0;
  put_u8(&out, ST_OK);
  return ST_OK;
}

static int op_usage(int wsfd) {
  struct usage u = {0};
  int fd = beneath(wsfd, ".", O_RDONLY | O_DIRECTORY);
  if (fd < 0) return fail_errno(errno, "workspace");
  walk_usage(fd, 0, &u);
  out.len = 0;
  put_u8(&out, ST_OK);
  put_u64(&out, u.bytes);
  put_u64(&out, u.files);
  put_u64(&out, u.dirs);
  put_u8(&out, (uint8_t)u.capped);
  return ST_OK;
}

/* rm -r of the workspace `ws` itself (beneath the root; never the root). */
static int op_drop(const struct req *r) {
  char tmp[4097];
  const char *parent, *name;
  if (!valid_rel(r->ws) || split(r->ws, tmp, sizeof tmp, &parent, &name))
    return fail(ST_INVALID_PATH, "invalid workspace");
  int pfd = beneath(root_fd, parent, O_PATH | O_DIRECTORY);
  if (pfd < 0) return errno == ENOENT ? (out.len = 0, put_u8(&out, ST_OK), ST_OK) : fail_errno(errno, r->ws);
  int fd = beneath(pfd, name, O_RDONLY | O_DIRECTORY);
  int rc = ST_OK;
  if (fd < 0) {
    if (errno != ENOENT) rc = fail_errno(errno, r->ws);
  } else if (remove_tree(fd, 0) || unlinkat(pfd, name, AT_REMOVEDIR)) {
    rc = fail_errno(errno, r->ws);
  }
  close(pfd);
  if (rc == ST_OK) out.len = 0, put_u8(&out, ST_OK);
  return rc;
}

static int handle(const struct req *r) {
  if (r->op == OP_DROP) return op_drop(r);
  if (r->op == OP_ENSURE) {
    if (!valid_rel(r->ws)) return fail(ST_INVALID_PATH, "invalid workspace");
    struct req m = *r;
    strcpy(m.path, r->ws);
    return op_mkdir(&m, root_fd);
  }
  if ((r->op != OP_USAGE && r->op != OP_LIST && r->op != OP_STAT) && !valid_rel(r->path))
    return fail(ST_INVALID_PATH, "invalid path: %s", r->path);
  if (*r->path && !valid_rel(r->path)) return fail(ST_INVALID_PATH, "invalid path: %s", r->path);
  if (r->op == OP_RENAME && !valid_rel(r->path2)) return fail(ST_INVALID_PATH, "invalid path: %s", r->path2);
  /* A write or mkdir creates the workspace itself (beneath the root, one checked step at a time). */
  int wsfd = r->op == OP_WRITE || r->op == OP_MKDIR ? (valid_rel(r->ws) ? mkdirs(root_fd, r->ws, 0755) : -1)
                                                    : open_ws(r->ws);
  if (wsfd < 0 && !valid_rel(r->ws)) return fail(ST_INVALID_PATH, "invalid workspace");
  if (wsfd < 0) return fail_errno(errno, "workspace");
  int rc;
  switch (r->op) {
    case OP_READ: rc = op_read(r, wsfd); break;
    case OP_WRITE: rc = op_write(r, wsfd); break;
    case OP_LIST: rc = op_list(r, wsfd); break;
    case OP_STAT: rc = op_stat(r, wsfd); break;
    case OP_REMOVE: rc = op_remove(r, wsfd); break;
    case OP_RENAME: rc = op_rename(r, wsfd); break;
    case OP_MKDIR: rc = op_mkdir(r, wsfd); break;
    case OP_USAGE: rc = op_usage(wsfd); break;
    default: rc = fail(ST_INVALID_PATH, "unknown operation %d", r->op);
  }
  close(wsfd);
  return rc;
}

/* ---- framing ---- */
static int read_full(int fd, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}
static int write_full(int fd, const void *p, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = write(fd, (const char *)p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    done += (size_t)w;
  }
  return 0;
}

static int take_str(const unsigned char **p, const unsigned char *end, char *dst) {
  if (end - *p < 2) return -1;
  uint16_t n;
  memcpy(&n, *p, 2);
  *p += 2;
  if (n > 4096 || end - *p < n) return -1;
  memcpy(dst, *p, n);
  dst[n] = 0;
  if (memchr(dst, 0, n)) return -1;
  *p += n;
  return 0;
}

static int parse(const unsigned char *p, size_t len, struct req *r) {
  const unsigned char *end = p + len;
  if (len < 25) return -1;
  r->op = p[0];
  memcpy(&r->n1, p + 1, 8);
  memcpy(&r->n2, p + 9, 8);
  memcpy(&r->n3, p + 17, 8);
  p += 25;
  if (take_str(&p, end, r->ws) || take_str(&p, end, r->path) || take_str(&p, end, r->path2)) return -1;
  r->data = p;
  r->data_len = (size_t)(end - p);
  return 0;
}

/* Confine this process to the workspace root (defence in depth; openat2 already keeps us beneath). */
static void landlock_self(void) {
  int abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return;
  uint64_t fs = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) fs |= 1ULL << 13; /* REFER */
  if (abi >= 3) fs |= 1ULL << 14; /* TRUNCATE */
  if (abi >= 5) fs |= 1ULL << 15; /* IOCTL_DEV */
  struct landlock_ruleset_attr attr = {.handled_access_fs = fs};
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs, 0);
  if (rs < 0) return;
  /* Inside the root: everything but execute, creating devices and symlinks. */
  uint64_t allowed = fs & ~(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                            LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM |
                            LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO);
  struct landlock_path_beneath_attr pb = {.allowed_access = allowed, .parent_fd = root_fd};
  if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) == 0 &&
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
    syscall(SYS_landlock_restrict_self, rs, 0);
  close(rs);
}

int main(int argc, char **argv) {
  if (argc != 2 || argv[1][0] != '/') {
    fprintf(stderr, "usage: islet-files <absolute workspace root>\n");
    return 64;
  }
  prctl(PR_SET_PDEATHSIG, 9);
  prctl(PR_SET_DUMPABLE, 0);
  root_fd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) {
    fprintf(stderr, "islet-files: cannot open %s: %s\n", argv[1], strerror(errno));
    return 66;
  }
  struct open_how probe = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_FLAGS};
  int t = (int)syscall(SYS_openat2, root_fd, ".", &probe, sizeof probe);
  if (t < 0) {
    fprintf(stderr, "islet-files: openat2 unavailable: %s\n", strerror(errno));
    return 69;
  }
  close(t);
  /* Bigger pipes: a 10 MiB file crosses in a few dozen reads instead of hundreds (Node reads a
   * pipe once per event-loop turn). Best effort; the default size works, only slower. */
  fcntl(0, F_SETPIPE_SZ, 1 << 20);
  fcntl(1, F_SETPIPE_SZ, 1 << 20);
  landlock_self();
  static struct req r;
  unsigned char *in = NULL;
  size_t in_cap = 0;
  for (;;) {
    uint32_t len;
    if (read_full(0, &len, 4)) return 0; /* parent closed the pipe */
    if (len > MAX_FRAME) return 65;
    if (len > in_cap) {
      in = realloc(in, len);
      if (!in) return 70;
      in_cap = len;
    }
    if (read_full(0, in, len)) return 0;
    if (parse(in, len, &r)) fail(ST_INVALID_PATH, "malformed request");
    else handle(&r);
    uint32_t olen = (uint32_t)out.len;
    if (write_full(1, &olen, 4) || write_full(1, out.p, out.len)) return 0;
    if (out.cap > (16u << 20)) {
      free(out.p);
      out.p = NULL;
      out.cap = 0;
    }
    out.len = 0;
  }
}
