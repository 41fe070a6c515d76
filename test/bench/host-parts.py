#!/usr/bin/env python3
"""
A sandbox host's (or raw isolated-vm's) CPU samples grouped by the part of a run they belong to.

  perf script -i /tmp/x/hostA.data > host.txt   # engine-cpu-split.ts with PERF_DIR=/tmp/x
  python3 test/bench/host-parts.py host.txt RUNS [HZ]

RUNS: the runs recorded (engine-cpu-split's RUNS, one round); HZ: perf's sampling rate (2999, as
engine-cpu-split records). Each sample is named by the first rule (in the order below) that one of
its frames matches, so a part nested in another (isolated-vm's default context inside `new
Isolate`) is told apart from it. Prints samples, share and µs a run for each part. Written for round
46 (`host-cpu`, test/bench/README.md): the default context isolated-vm makes in every isolate.
"""
import re
import sys
from collections import Counter

# (part, a frame that marks it); first match wins, in this order.
RULES = [
    # An isolate's teardown (the host: as `done`'s turn unwinds; raw: `dispose`).
    ('teardown', r'~IsolateEnvironment|Heap::TearDown|Isolate::Deinit|Isolate::Delete'),
    # isolated-vm's `new Isolate` makes a context of its own (IsolateEnvironment::IsolateCtor ->
    # NewContext, for its internal use: errors copied out, compiles) before the caller makes one.
    ('default context (in new Isolate)', r'IsolateCtor.*|NewContext', 'IsolateCtor>NewContext'),
    ('new Isolate (heap, snapshot)', r'IsolateCtor|IsolateHandle::New'),
    ('createContext', r'CreateContextRunner|NewContext'),
    ('compile (code cache, script)', r'CompileScriptRunner'),
    ('AsyncFunction compile (program)', r'AsyncFunctionConstructor|CreateDynamicFunction'),
    ('dispose error (stack, copy, throw)',
     r'CurrentStackTrace|ChainStack|AttachStackGetter|ExternalCopyError::CopyInto|__cxa_throw|_Unwind_'),
    ('frame write', r'node::fs::WriteBuffer|uv_fs_write'),
    ('callbacks into the host', r'CallbackTransferable::Invoke|InvokeRunner'),
    ('turns (harness, program)', r'ApplyRunner|RunRunner|EvalRunner'),
    # Reading the run's frame, outside the turns it starts (they run from the read).
    ('frame read', r'uv__read|OnStreamRead'),
    ('gc', r'Heap::CollectGarbage|Scavenger|MarkCompact'),
    ('isolated-vm other', r'ivm::'),
]


def part_of(frames):
    """frames: outermost first."""
    names = [re.sub(r'\+0x[0-9a-f]+.*$', '', f) for f in frames]
    for rule in RULES:
        name, rx = rule[0], re.compile(rule[1])
        if len(rule) == 3:
            # Nested: the inner frame below the outer one.
            outer, inner = rule[2].split('>')
            seen_outer = False
            for n in names:
                if outer in n:
                    seen_outer = True
                elif seen_outer and inner in n:
                    return name
            continue
        if any(rx.search(n) for n in names):
            return name
    return 'other (node, kernel, loop)'


def main():
    path, runs = sys.argv[1], int(sys.argv[2])
    hz = float(sys.argv[3]) if len(sys.argv) > 3 else 2999.0
    counts = Counter()
    stack = []

    def flush():
        if stack:
            counts[part_of([re.sub(r'^[0-9a-f]+ ', '', f) for f in reversed(stack)])] += 1

    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line.strip():
                flush()
                stack.clear()
            elif line[0] in ' \t':
                stack.append(line.strip())
    flush()
    total = sum(counts.values())
    us = 1e6 / hz / runs
    print(f'{total} samples, {runs} runs, {total * us:.0f} µs a run')
    for name, n in counts.most_common():
        print(f'{name:36s} {n:7d} {100 * n / total:6.2f} % {n * us:8.1f} µs a run')


if __name__ == '__main__':
    main()
