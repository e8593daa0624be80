// clock.profile in the engine host, with a browser client's file access: a `profile-hw` file (its
// --out form, or the --json answer holding one) in a chosen folder comes back as its curves; a
// file that is not a profile is refused in one line that never quotes it; a path outside the
// chosen folders gets the answer a missing one gets.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allowedFolders } from '../../src/host/allowed-folders.js';
import { EngineHost } from '../../src/host/host.js';
import type { EngineEvent } from '../../src/shared/messages.js';
import { tempDir } from '../engine/model/helpers.js';
import { SAMPLE_CURVES } from '../shared/fixtures.js';
import { connectClient } from './run-fixtures.js';

const SECRET = 'TOPSECRET';
const tmp = tempDir('echo-clock-profile-');
const chosen = join(tmp.path, 'chosen');
const outside = join(tmp.path, 'outside');
mkdirSync(chosen);
mkdirSync(outside);
const host = new EngineHost({ version: 'test', modelsDir: join(tmp.path, 'models'), dataDir: chosen, files: allowedFolders([chosen], chosen), log: () => {} });
afterAll(async () => {
  await host.shutdown();
  tmp.cleanup();
});

export const PROFILE = {
  kind: 'echo-hw-profile',
  version: 1,
  createdAt: '2026-12-01T00:00:00.000Z',
  host: { cpu: 'Test CPU', threads: 8, provider: 'cpu' },
  models: { draft: 'd', target: 't' },
  slots: 16,
  context: 64,
  ...SAMPLE_CURVES,
};

async function ask(path: string): Promise<EngineEvent> {
  const client = connectClient(host);
  client.send({ type: 'clock.profile', path });
  // The reply is the first event this client gets (it is not sent broadcasts before its hello).
  const answer = await client.nextOf(['clock.profile', 'error']);
  client.close();
  return answer;
}

describe('clock.profile', () => {
  it('answers a profile-hw file, or its --json answer, with its curves', async () => {
    writeFileSync(join(chosen, 'gpu-box.json'), JSON.stringify(PROFILE));
    expect(await ask(join(chosen, 'gpu-box.json'))).toEqual({
      type: 'clock.profile',
      name: 'gpu-box',
      measuredOn: 'Test CPU (cpu)',
      target: PROFILE.target,
      draft: PROFILE.draft,
      slots: 16,
      context: 64,
    });
    writeFileSync(join(chosen, 'printed.json'), JSON.stringify({ target: {}, draft: {}, suggestions: [], profile: PROFILE }));
    expect(await ask('printed.json')).toMatchObject({ type: 'clock.profile', name: 'printed', slots: 16 });
    // Timed at a longer context too (profile-hw --context 64,160): the studio's clock gets both.
    const longer = [{ context: 160, target: PROFILE.target, draft: PROFILE.draft }];
    writeFileSync(join(chosen, 'two-contexts.json'), JSON.stringify({ ...PROFILE, longer }));
    expect(await ask('two-contexts.json')).toMatchObject({ type: 'clock.profile', context: 64, longer });
  });

  it('refuses a file that is not a profile in one line, never quoting it', async () => {
    writeFileSync(join(chosen, 'passwd.json'), `root:${SECRET}:0:0\n`);
    writeFileSync(join(chosen, 'other.json'), JSON.stringify({ kind: SECRET, version: 1 }));
    for (const [file, why] of [
      ['passwd.json', /^measured profile clock: passwd\.json: not JSON/],
      ['other.json', /^measured profile clock: other\.json: not a valid hardware profile: kind: /],
    ] as const) {
      const answer = await ask(file);
      expect(answer).toMatchObject({ type: 'error', message: expect.stringMatching(why) });
      const message = (answer as { message: string }).message;
      expect(message).not.toContain(SECRET);
      expect(message).not.toContain('\n');
    }
  });

  it('answers a path outside the chosen folders as it answers a missing one', async () => {
    writeFileSync(join(outside, 'gpu-box.json'), JSON.stringify(PROFILE));
    const outsideAnswer = await ask(join(outside, 'gpu-box.json'));
    const missingAnswer = await ask(join(outside, 'nothing.json'));
    const strip = (e: EngineEvent, named: string) => (e as { message: string }).message.split(named).join('<path>');
    expect(outsideAnswer.type).toBe('error');
    expect(strip(outsideAnswer, join(outside, 'gpu-box.json'))).toBe(strip(missingAnswer, join(outside, 'nothing.json')));
  });
});
