// seq-layout.ts's SLICE_NS: sched_setattr(tid, SCHED_OTHER, sched_runtime = slice ns, its nice kept) for
// each tid, EEVDF's custom slice request (Linux >= 6.12; allowed unprivileged). Usage: slice <ns> <tid>...
// Build: gcc -O2 -o /tmp/sched-slice test/bench/sched-slice.c
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
struct attr { uint32_t size, policy; uint64_t flags; int32_t nice; uint32_t prio; uint64_t runtime, deadline, period; uint32_t umin, umax; };
int main(int argc, char **argv) {
  int bad = 0;
  for (int i = 2; i < argc; i++) {
    struct attr a = {0};
    a.size = sizeof a; a.policy = 0; a.runtime = strtoull(argv[1], 0, 10);
    int tid = atoi(argv[i]);
    a.nice = getpriority(PRIO_PROCESS, tid);
    if (syscall(SYS_sched_setattr, tid, &a, 0) != 0) { perror(argv[i]); bad = 1; }
  }
  return bad;
}
