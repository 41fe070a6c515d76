/**
 * A describe's operator fixture (operator-fixture.ts) started in its `beforeAll` and stopped in its
 * `afterAll`, the hooks every end-to-end describe wrote out. Apart from operator-fixture.ts because
 * it imports vitest: benches and the kube installer load the fixture itself.
 */
import { afterAll, beforeAll } from 'vitest';
import type { FakeKubeApiOptions } from './fake-kube-api.ts';
import { type OperatorFixture, startOperatorFixture } from './operator-fixture.ts';

/**
 * Call inside a describe: `beforeAll` starts a fixture (`opts` as `startOperatorFixture`'s), fills
 * the returned object with it and runs `then` (an operator started, what the describe keeps of
 * it); `afterAll` stops it. Read the fixture inside tests or later hooks, not at describe time.
 */
export function onOperatorFixture(
  then?: (fx: OperatorFixture) => Promise<unknown>,
  opts?: FakeKubeApiOptions,
): OperatorFixture {
  const fx = {} as OperatorFixture;
  let started = false;
  beforeAll(async () => {
    Object.assign(fx, await startOperatorFixture(opts));
    started = true;
    await then?.(fx);
  });
  afterAll(async () => {
    if (started) await fx.stop();
  });
  return fx;
}
