/*
 * islet-jail --supervise: the command's whole process tree ends with it.
 *
 * A process group is not a wall (setsid leaves it), a pid file is not either (double fork). The
 * supervisor is the child subreaper (PR_SET_CHILD_SUBREAPER) of everything the command starts:
 * an orphan re-parents to it, never to init, so every process the command ever started is a
 * descendant of the supervisor for as long as it lives. When the command exits, at the deadline or
 * on a stop signal (or when the workspace passes its limits: workspace-budget.h), the supervisor
 * SIGKILLs every descendant and reaps until it has no child left
 * (waitpid ECHILD: then no descendant exists, since each one's parent chain ends at a child of
 * ours). Needs no privilege; the supervisor is not jailed and the jailed tree cannot signal it
 * (Landlock signal scope, ABI >= 6; a different uid when started as root).
 *
 * Only our own unreaped children have stable pids; a deeper descendant is signalled through a
 * pidfd opened before its parent link is checked again, so a recycled pid is never hit.
 *
 * Included once, by islet-jail.c (one translation unit keeps the build a single gcc call).
 */
#include <signal.h>
#include <time.h>

#define EXIT_DEADLINE 124

static pid_t sup_parent;

struct proc_entry {
  pid_t pid, ppid;
  int mark;
};

/* The parent pid in /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold spaces and ')'). */
static pid_t read_ppid(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *close_paren = strrchr(buf, ')');
  char state;
  int ppid;
  if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2) return -1;
  return (pid_t)ppid;
}

/* Every process of the system with its parent; *n entries, realloc'd into *list. */
static void scan_procs(struct proc_entry **list, size_t *n, size_t *cap) {
  *n = 0;
  DIR *d = opendir("/proc");
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    pid_t ppid = read_ppid((pid_t)pid);
    if (ppid < 0) continue;
    if (*n == *cap) {
      size_t ncap = *cap ? *cap * 2 : 1024;
      struct proc_entry *grown = realloc(*list, ncap * sizeof **list);
      if (!grown) break;
      *list = grown, *cap = ncap;
    }
    (*list)[(*n)++] = (struct proc_entry){(pid_t)pid, ppid, 0};
  }
  closedir(d);
}

static int is_marked(const struct proc_entry *list, size_t n, pid_t pid, pid_t self) {
  if (pid == self) return 1;
  for (size_t i = 0; i < n; i++)
    if (list[i].pid == pid) return list[i].mark;
  return 0;
}

/* SIGKILLs every current descendant; returns how many it found. */
static size_t kill_descendants(void) {
  static struct proc_entry *list;
  static size_t cap;
  size_t n;
  pid_t self = getpid();
  scan_procs(&list, &n, &cap);
  /* Mark descendants: repeat until no new one (depth passes; n is small). */
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < n; i++)
      if (!list[i].mark && is_marked(list, n, list[i].ppid, self)) list[i].mark = 1, changed = 1;
  }
  size_t found = 0;
  for (size_t i = 0; i < n; i++) {
    if (!list[i].mark) continue;
    found++;
    if (list[i].ppid == self) {
      kill(list[i].pid, SIGKILL); /* our child: its pid is ours until we reap it */
      continue;
    }
    int fd = (int)syscall(SYS_pidfd_open, list[i].pid, 0);
    if (fd < 0) {
      if (errno == ENOSYS) kill(list[i].pid, SIGKILL); /* pre-5.3 kernel: the same race window as kill(1) */
      continue;
    }
    /* Re-read the parent through the pid the fd pins: a still-live process with a parent in the tree. */
    if (is_marked(list, n, read_ppid(list[i].pid), self)) syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
    close(fd);
  }
  return found;
}

/* Kills and reaps the whole tree; records the command's status if it had not been reaped yet. */
static void end_tree(pid_t command, int *command_status) {
  const struct timespec pause = {0, 2 * 1000 * 1000};
  for (;;) {
    size_t found = kill_descendants();
    pid_t p;
    int status;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0)
      if (p == command && *command_status < 0) *command_status = status;
    if (p < 0 && errno == ECHILD) return;
    (void)found;
    nanosleep(&pause, NULL);
  }
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static sigset_t sup_signals, sup_old_mask;

/* Forks the command; the parent supervises it and exits, the child returns to be jailed. */
static void supervise_fork(long long timeout_ms, int report_fd) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) die(EXIT_UNAVAILABLE, "cannot become a subreaper: %s", strerror(errno));
  sigemptyset(&sup_signals);
  sigaddset(&sup_signals, SIGCHLD);
  sigaddset(&sup_signals, SIGTERM);
  sigaddset(&sup_signals, SIGINT);
  sigaddset(&sup_signals, SIGHUP);
  sigprocmask(SIG_BLOCK, &sup_signals, &sup_old_mask);
  sup_parent = getpid();
  long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
  pid_t command = fork();
  if (command < 0) die(EXIT_UNAVAILABLE, "cannot fork: %s", strerror(errno));
  if (command == 0) {
    sigprocmask(SIG_SETMASK, &sup_old_mask, NULL);
    return;
  }
  if (report_fd > 2) close(report_fd); /* the child writes the report; the reader sees EOF when it is done */

  int status = -1, stop_signal = 0, timed_out = 0, over_budget = 0;
  for (;;) {
    pid_t p;
    int s;
    while ((p = waitpid(-1, &s, WNOHANG)) > 0)
      if (p == command) status = s;
    if (status >= 0) break;
    if (budget_exceeded()) {
      over_budget = 1;
      break;
    }
    struct timespec wait = {1, 0};
    if (budget.on) wait = (struct timespec){0, BUDGET_POLL_MS * 1000000L};
    if (deadline >= 0) {
      long long left = deadline - now_ms();
      if (left <= 0) {
        timed_out = 1;
        break;
      }
      if (left < 1000 && left * 1000000 < wait.tv_sec * 1000000000LL + wait.tv_nsec)
        wait = (struct timespec){0, left * 1000000};
    }
    int sig = sigtimedwait(&sup_signals, NULL, &wait);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP) {
      stop_signal = sig;
      break;
    }
  }
  end_tree(command, &status);
  if (!over_budget && !timed_out && !stop_signal && budget_exceeded_at_end()) over_budget = 1;
  if (over_budget) {
    budget_report_stop();
    exit(EXIT_WORKSPACE_FULL);
  }
  if (timed_out) exit(EXIT_DEADLINE);
  if (stop_signal) exit(128 + stop_signal);
  if (WIFEXITED(status)) exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) exit(128 + WTERMSIG(status));
  exit(EXIT_EXEC);
}

/* In the command, once its uid is final: die with the supervisor (a killed supervisor must not
 * leave the command running unwatched). */
static void supervised_child_ready(void) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != sup_parent) _exit(EXIT_UNAVAILABLE);
}
