// hw.knee through the engine host: the target timed on this machine with progress, the knee and
// the K_max it suggests for the batch; refused without a target, and while a run lives.
import { describe, expect, it } from 'vitest';
import { suggestKmax } from '../../src/engine/cost/knee.js';
import { tinyConfig, useTinyPairHost } from './run-fixtures.js';

const fixture = useTinyPairHost('echo-host-knee-');

describe('hw.knee', () => {
  it("times the target with progress and suggests K_max for the batch from its knee", async () => {
    const { host, client } = fixture.newHost();
    client.send({ type: 'hw.knee', batch: 24, targetDir: fixture.pair.targetDir });
    const answer = await client.next('hw.knee');
    expect(answer.target).toBe(fixture.pair.targetDir);
    expect(answer.batch).toBe(24);
    expect(answer.knee).toBeGreaterThanOrEqual(1);
    expect(answer.tArMs).toBeGreaterThan(0);
    expect(answer.kmax).toBe(suggestKmax({ kmax: answer.knee }, 24));
    expect(answer.kmax).toBeGreaterThanOrEqual(24);
    const progress = client.events.flatMap((e) => (e.type === 'progress' && e.task === 'knee' ? [e] : []));
    expect(progress.map((e) => e.done)).toEqual(progress.map((_, i) => i)); // one per timed token count, then the fit
    const last = progress[progress.length - 1];
    expect(last.done).toBe(last.total);
    expect(last.message).toBe(`knee at ${answer.knee} tokens (${answer.tArMs.toFixed(2)} ms for one): K_max ${answer.kmax} for batch 24`);
    expect(client.events.some((e) => e.type === 'error')).toBe(false);
    client.close();
    await host.shutdown();
  });

  it('says so when there is no target to time, and refuses while a run lives', async () => {
    const { host, client } = fixture.newHost();
    client.send({ type: 'hw.knee', batch: 4 });
    expect((await client.next('error')).message).toMatch(/^cannot time the target: the bundled target \(echo-demo-target\) is not installed; choose a target folder$/);

    client.send({ type: 'run.start', config: tinyConfig(fixture.pair, { requests: 6, maxNewTokens: 400 }) });
    await client.next('run.state', (e) => e.state === 'running');
    client.send({ type: 'hw.knee', batch: 4, targetDir: fixture.pair.targetDir });
    expect((await client.next('error')).message).toMatch(/^cannot time the target while a run is (running|paused): .*stop it first$/);
    client.send({ type: 'run.stop' });
    await client.next('run.state', (e) => e.state === 'finished');
    client.close();
    await host.shutdown();
  });
});
