#!/usr/bin/env python3
"""Round 44 `app-wakeups`: a 100-call run's outcome groups from app-wakeups.patch's gateway trace.

  python3 test/bench/app-wakeups-groups.py /tmp/appwk/trace.<gateway pid> [RUNS=150]

Tags: A an App answer read whole, W a request written (app-h1), D a request dispatched (undici),
C app-h1's check phase, F <n> a journal turn batch sent with n items (the claims' 100, then the
outcome groups). A run ends when its outcome groups hold 100 outcomes. Prints the outcome groups a
run (each one EVALSHA and one fsync'd write in Redis) and the first group's size.
"""
import statistics
import sys

path = sys.argv[1]
keep = int(sys.argv[2]) if len(sys.argv) > 2 else 150
runs, answers, groups = [], 0, []
for line in open(path):
    _t, tag, n = line.split()
    if tag == 'A':
        answers += 1
    if tag == 'F' and answers > 0:
        groups.append(int(n))
        if sum(groups) >= 100:
            runs.append(groups)
            answers, groups = 0, []
runs = runs[-keep:]
sizes = sorted(len(g) for g in runs)
print(f'runs {len(runs)}: outcome groups a run mean {statistics.mean(sizes):.2f}, p50 {sizes[len(sizes) // 2]}, '
      f'max {sizes[-1]}, runs with over 6 groups {sum(1 for s in sizes if s > 6)}; '
      f'first group p50 {sorted(g[0] for g in runs)[len(runs) // 2]} outcomes')
