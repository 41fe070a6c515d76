// `node test/bench/frozen-list.mjs`: what a frozen list of names costs a submit's join of them
// (`admitCall`: `tenantKeys.concat(…, usageKeys.slice(0, -1))`) against a plain one, hot, ns a call.
// A frozen array is in V8's frozen elements kind, outside the fast paths of `slice` and `concat`
// (test/bench/README.md, round 38 `tidy`: 3× as long). Timed: run it under the bench lock.
const mk = () => Array.from({ length: 9 }, (_, i) => `islet:{t:tenant-${i}}:bytes:${1000 + i}`);
const a = mk();
const f = Object.freeze(mk());
const run = (arr, n) => {
  let s = 0;
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const x = ['k1', 'k2'].concat('a', arr.slice(0, -1));
    s += x.length;
  }
  return [Number(process.hrtime.bigint() - t) / n, s];
};
for (let r = 0; r < 3; r++) {
  console.log('plain', run(a, 300000)[0].toFixed(0), 'ns; frozen', run(f, 300000)[0].toFixed(0), 'ns');
}
