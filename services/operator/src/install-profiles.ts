/**
 * The seccomp profile installer the chart's DaemonSet runs on every node (operator image, no
 * shell): copies the profiles from the ConfigMap mount to the kubelet's seccomp root, atomically
 * (temp file + rename, so the kubelet never reads half a profile), then re-checks every interval
 * and repairs drift (a node image update wiping the directory). Usage:
 *   node services/operator/src/install-profiles.ts <from-dir> <to-dir> [interval-ms]
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Installs every *.json of `fromDir` into `toDir`; returns the names written (changed or new). */
export function installProfiles(fromDir: string, toDir: string): string[] {
  mkdirSync(toDir, { recursive: true, mode: 0o755 });
  const written: string[] = [];
  for (const name of readdirSync(fromDir).filter((n) => n.endsWith('.json') && !n.startsWith('.'))) {
    const want = readFileSync(join(fromDir, name));
    JSON.parse(want.toString('utf8')); // never install a profile the kubelet cannot parse
    let have: Buffer | undefined;
    try {
      have = readFileSync(join(toDir, name));
    } catch {
      have = undefined;
    }
    if (have?.equals(want)) continue;
    const tmp = join(toDir, `.${name}.${process.pid}.tmp`);
    writeFileSync(tmp, want, { mode: 0o644 });
    renameSync(tmp, join(toDir, name));
    written.push(name);
  }
  return written;
}

if (import.meta.main) {
  const [from, to, interval] = process.argv.slice(2);
  if (!from || !to) {
    console.error('usage: install-profiles.ts <from-dir> <to-dir> [interval-ms]');
    process.exit(2);
  }
  const intervalMs = Number(interval ?? 60_000);
  const run = () => {
    const written = installProfiles(from, to);
    if (written.length) console.log(JSON.stringify({ msg: 'seccomp profiles installed', to, written }));
  };
  // Told to stop at any moment, the first pass included (a pod deleted as it starts), it exits 0:
  // the handler is in place before anything is said or done.
  let timer: NodeJS.Timeout | undefined;
  process.on('SIGTERM', () => {
    clearInterval(timer);
    process.exit(0);
  });
  run();
  timer = setInterval(run, intervalMs);
}
