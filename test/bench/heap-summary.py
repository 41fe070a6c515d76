# Bench only (round 38, `gw-memory`): a .heapsnapshot's self size by kind and constructor, top N.
# Usage: python3 test/bench/heap-summary.py <file.heapsnapshot> [N]
import json, sys, collections
d = json.load(open(sys.argv[1]))
m = d['snapshot']['meta']
nf = m['node_fields']; nt = m['node_types'][0]
N = len(nf)
it, iname, isz = nf.index('type'), nf.index('name'), nf.index('self_size')
strings = d['strings']; nodes = d['nodes']
by = collections.Counter(); cnt = collections.Counter(); total = 0
for i in range(0, len(nodes), N):
    t = nt[nodes[i+it]]; name = strings[nodes[i+iname]]
    if t in ('string','concatenated string','sliced string','number','code','hidden'):
        key = t
    else:
        key = f'{t}:{name[:60]}'
    s = nodes[i+isz]; by[key] += s; cnt[key] += 1; total += s
print(f'total {total/1048576:.1f} MB, {len(nodes)//N} nodes')
for k, v in by.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 40):
    print(f'{v/1048576:8.2f} MB {cnt[k]:8d}  {k}')
