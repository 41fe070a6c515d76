/*
 * islet-probe: tries operations a sandbox must deny or allow and prints one JSON object
 * {"<op>": "ok" | "<ERRNO NAME>"} so tests can assert from inside the sandbox (directly or under runc).
 *
 * Ops: socket-inet socket-inet6 socket-netlink socket-netlink-audit socket-packet socket-vsock socket-unix unshare-user
 * unshare-net unshare-mount clone-newnet ptrace-traceme io-uring-setup mount bpf keyctl userfaultfd
 * perf-event-open process-vm-readv open-by-handle uid  read:<path>  write:<path>  mkdir:<path>
 * exec:<path>  proc1-environ  kill-parent  shmget msgget semget mq-open memfd-create inotify-init
 * socketpair-stream socketpair-dgram  connect-unix:<path>
 * (IPC objects a probe manages to create are removed at once: a probe leaves nothing behind.)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <mqueue.h>
#include <sys/inotify.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/ptrace.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/un.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static const char *name_of(int e) {
  switch (e) {
  case EPERM: return "EPERM";
  case EACCES: return "EACCES";
  case ENOSYS: return "ENOSYS";
  case EROFS: return "EROFS";
  case ENOENT: return "ENOENT";
  case EINVAL: return "EINVAL";
  case EAFNOSUPPORT: return "EAFNOSUPPORT";
  case EXDEV: return "EXDEV";
  case ENOTDIR: return "ENOTDIR";
  case EEXIST: return "EEXIST";
  case EFAULT: return "EFAULT";
  case ESRCH: return "ESRCH";
  case EBADF: return "EBADF";
  case EOPNOTSUPP: return "EOPNOTSUPP";
  default: {
    static char buf[32];
    snprintf(buf, sizeof buf, "E%d", e);
    return buf;
  }
  }
}

static const char *result(long rc) { return rc < 0 ? name_of(errno) : "ok"; }

static long try_socket(int domain, int type) {
  int fd = socket(domain, type, 0);
  if (fd >= 0) close(fd);
  return fd;
}

/* Runs fn in a child so ops that succeed (unshare, ptrace) do not change the probe itself. */
static long in_child(long (*fn)(void)) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(fn() < 0 ? errno : 0);
  int status = 0;
  waitpid(pid, &status, 0);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : EINTR;
  if (code) {
    errno = code;
    return -1;
  }
  return 0;
}
static long op_unshare_user(void) { return unshare(CLONE_NEWUSER); }
static long op_unshare_net(void) { return unshare(CLONE_NEWNET); }
static long op_unshare_mount(void) { return unshare(CLONE_NEWNS); }
static long op_ptrace(void) { return ptrace(PTRACE_TRACEME, 0, 0, 0); }
static long op_clone_newnet(void) {
  long pid = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid((pid_t)pid, NULL, 0);
  return pid < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
  printf("{");
  for (int i = 1; i < argc; i++) {
    const char *op = argv[i];
    const char *res;
    char extra[64] = "";
    if (!strcmp(op, "socket-inet")) res = result(try_socket(AF_INET, SOCK_STREAM));
    else if (!strcmp(op, "socket-inet6")) res = result(try_socket(AF_INET6, SOCK_DGRAM));
    else if (!strcmp(op, "socket-netlink")) res = result(try_socket(AF_NETLINK, SOCK_RAW));
    else if (!strcmp(op, "socket-netlink-audit")) {
      int fd = socket(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */);
      res = result(fd);
      if (fd >= 0) close(fd);
    } else if (!strcmp(op, "socket-packet")) res = result(try_socket(AF_PACKET, SOCK_RAW));
    else if (!strcmp(op, "socket-vsock")) res = result(try_socket(AF_VSOCK, SOCK_STREAM));
    else if (!strcmp(op, "socket-unix")) res = result(try_socket(AF_UNIX, SOCK_STREAM));
    else if (!strcmp(op, "shmget")) {
      int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
      res = result(id);
      if (id >= 0) shmctl(id, IPC_RMID, NULL);
    } else if (!strcmp(op, "msgget")) {
      int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
      res = result(id);
      if (id >= 0) msgctl(id, IPC_RMID, NULL);
    } else if (!strcmp(op, "semget")) {
      int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
      res = result(id);
      if (id >= 0) semctl(id, 0, IPC_RMID);
    } else if (!strcmp(op, "mq-open")) {
      char name[64];
      snprintf(name, sizeof name, "/islet-probe-%d", (int)getpid());
      mqd_t q = mq_open(name, O_CREAT | O_RDWR, 0600, NULL);
      res = result(q == (mqd_t)-1 ? -1 : 0);
      if (q != (mqd_t)-1) mq_close(q), mq_unlink(name);
    } else if (!strcmp(op, "memfd-create")) {
      long fd = syscall(SYS_memfd_create, "probe", 0);
      res = result(fd);
      if (fd >= 0) close((int)fd);
    } else if (!strcmp(op, "inotify-init")) {
      int fd = inotify_init1(IN_CLOEXEC);
      res = result(fd);
      if (fd >= 0) close(fd);
    } else if (!strcmp(op, "socketpair-stream") || !strcmp(op, "socketpair-dgram")) {
      int sv[2];
      int rc = socketpair(AF_UNIX, !strcmp(op, "socketpair-stream") ? SOCK_STREAM : SOCK_DGRAM, 0, sv);
      res = result(rc);
      if (rc == 0) close(sv[0]), close(sv[1]);
    } else if (!strncmp(op, "connect-unix:", 13)) {
      struct sockaddr_un addr = {.sun_family = AF_UNIX};
      snprintf(addr.sun_path, sizeof addr.sun_path, "%s", op + 13);
      int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      long rc = fd < 0 ? -1 : connect(fd, (struct sockaddr *)&addr, sizeof addr);
      res = result(rc);
      if (fd >= 0) close(fd);
    } else if (!strcmp(op, "unshare-user")) res = result(in_child(op_unshare_user));
    else if (!strcmp(op, "unshare-net")) res = result(in_child(op_unshare_net));
    else if (!strcmp(op, "unshare-mount")) res = result(in_child(op_unshare_mount));
    else if (!strcmp(op, "clone-newnet")) res = result(op_clone_newnet());
    else if (!strcmp(op, "ptrace-traceme")) res = result(in_child(op_ptrace));
    else if (!strcmp(op, "io-uring-setup")) {
      struct io_uring_params p;
      memset(&p, 0, sizeof p);
      long fd = syscall(__NR_io_uring_setup, 4, &p);
      res = result(fd);
      if (fd >= 0) close((int)fd);
    } else if (!strcmp(op, "mount")) res = result(mount("none", "/tmp", "tmpfs", 0, NULL));
    else if (!strcmp(op, "bpf")) res = result(syscall(__NR_bpf, 0, NULL, 0));
    else if (!strcmp(op, "keyctl")) res = result(syscall(__NR_keyctl, 0 /* GET_KEYRING_ID */, -3, 0));
    else if (!strcmp(op, "userfaultfd")) res = result(syscall(__NR_userfaultfd, 0));
    else if (!strcmp(op, "perf-event-open")) res = result(syscall(__NR_perf_event_open, NULL, 0, -1, -1, 0));
    else if (!strcmp(op, "process-vm-readv")) {
      char a[8], b[8] = "x";
      struct iovec l = {a, 1}, r = {b, 1};
      res = result(process_vm_readv(getppid(), &l, 1, &r, 1, 0));
    } else if (!strcmp(op, "open-by-handle")) res = result(syscall(__NR_open_by_handle_at, AT_FDCWD, NULL, 0));
    else if (!strcmp(op, "proc1-environ")) {
      int fd = open("/proc/1/environ", O_RDONLY);
      char c;
      long rc = fd < 0 ? -1 : read(fd, &c, 1);
      res = result(rc);
      if (fd >= 0) close(fd);
    } else if (!strcmp(op, "kill-parent")) res = result(kill(getppid(), 0));
    else if (!strcmp(op, "uid")) {
      snprintf(extra, sizeof extra, "%d", (int)getuid());
      res = extra;
    } else if (!strncmp(op, "read:", 5)) {
      int fd = open(op + 5, O_RDONLY);
      res = result(fd);
      if (fd >= 0) close(fd);
    } else if (!strncmp(op, "write:", 6)) {
      int fd = open(op + 6, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      long rc = fd < 0 ? -1 : write(fd, "probe\n", 6);
      res = result(rc);
      if (fd >= 0) close(fd);
    } else if (!strncmp(op, "mkdir:", 6)) res = result(mkdir(op + 6, 0755));
    else if (!strncmp(op, "exec:", 5)) {
      pid_t pid = fork();
      if (pid == 0) {
        char *args[] = {(char *)(op + 5), NULL};
        execv(op + 5, args);
        _exit(100 + errno);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
      errno = code >= 100 ? code - 100 : 0;
      res = code >= 100 ? name_of(errno) : "ok";
    } else res = "unknown-op";
    printf("%s\"%s\":\"%s\"", i > 1 ? "," : "", op, res);
  }
  printf("}\n");
  return 0;
}
