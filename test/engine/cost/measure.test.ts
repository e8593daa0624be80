import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clockFromSpec } from '../../../src/engine/cost/clock';
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { HardwareProfileSchema, loadHardwareProfile, measureDraftAfterTarget, measureForwardCurve, measureForwardCurves, parseHardwareProfile, profileMismatches, rowsNeeded, type HardwareProfile } from '../../../src/engine/cost/measure';
import { loadFixturePair, type FixturePair } from '../fixtures/pair';

/** The model, with each forward's entries handed to `seen` first. */
function recordForwards<T extends { forward: (entries: never, outputs: never) => unknown }>(model: T, seen: (entries: { slot: number; tokens: Int32Array }[]) => void): T {
  return new Proxy(model, {
    get(t, key) {
      const value = Reflect.get(t, key);
      if (typeof value !== 'function') return value;
      if (key !== 'forward') return value.bind(t);
      return (entries: { slot: number; tokens: Int32Array }[], outputs: unknown) => {
        seen(entries);
        return value.call(t, entries, outputs);
      };
    },
  });
}

describe('measured forward curve', () => {
  let pair: FixturePair;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'same', slots: 4, maxLength: 64 });
  });
  afterAll(async () => pair?.release());

  it('times one point per token count and leaves the slots free', async () => {
    const options = { tokenCounts: [1, 4, 16, 32], repeats: 2, slots: 4, context: 8 };
    expect(rowsNeeded(options)).toBe(8 + 8 + 1);
    const points = await measureForwardCurve(pair.target, options);
    expect(points.map((p) => p.tokens)).toEqual([1, 4, 16, 32]);
    for (const p of points) expect(p.ms).toBeGreaterThan(0);
    // All four slots are free again.
    const slots = [0, 1, 2, 3].map(() => pair.target.allocSlot());
    expect(new Set(slots).size).toBe(4);
    for (const s of slots) pair.target.freeSlot(s);
  });

  it('runs every size once untimed, then times the sizes in turns, a round at a time, largest first', async () => {
    const sizes: number[] = [];
    const recording = recordForwards(pair.target, (entries) => sizes.push(entries.reduce((n, e) => n + e.tokens.length, 0)));
    const rounds: string[] = [];
    await measureForwardCurve(recording, { tokenCounts: [1, 4, 16, 32], repeats: 2, slots: 4, context: 8, onRound: (done, total) => rounds.push(`${done}/${total}`) });
    // The context (4 slots × 8 rows), the untimed pass, then each round of the sizes.
    expect(sizes).toEqual([32, 32, 16, 4, 1, 32, 16, 4, 1, 32, 16, 4, 1]);
    expect(rounds).toEqual(['1/3', '2/3', '3/3']);
  });

  it('times several series of several models in turns, each on its own slots, and gives a curve for each', async () => {
    const calls: { model: string; rows: number; slots: number[] }[] = [];
    const recording = (model: typeof pair.target | typeof pair.draft, name: string) =>
      recordForwards(model, (entries) => calls.push({ model: name, rows: entries.reduce((n, e) => n + e.tokens.length, 0), slots: entries.map((e) => e.slot) }));
    const seen: string[] = [];
    const curves = await measureForwardCurves([recording(pair.target, 'T'), recording(pair.draft, 'd')], {
      repeats: 2,
      series: [
        { context: 4, slots: 2, tokenCounts: [1, 4] },
        { context: 12, slots: 1, tokenCounts: [2, 3, 5] },
      ],
      onPoint: (m, s, p) => seen.push(`${m}:${s}:${p.tokens}`),
    });
    expect(curves.map((perSeries) => perSeries.map((c) => c.map((p) => p.tokens)))).toEqual([[[1, 4], [2, 3, 5]], [[1, 4], [2, 3, 5]]]);
    expect(seen).toEqual(['0:0:1', '0:0:4', '0:1:2', '0:1:3', '0:1:5', '1:0:1', '1:0:4', '1:1:2', '1:1:3', '1:1:5']);
    // Each model's two series (two slots of 4 rows, one of 12), the untimed pass of each, then
    // rounds that visit both models' series, largest first.
    const round = ['T4', 'T1', 'T5', 'T3', 'T2', 'd4', 'd1', 'd5', 'd3', 'd2'];
    expect(calls.map((c) => `${c.model}${c.rows}`)).toEqual(['T8', 'T12', 'd8', 'd12', ...round, ...round, ...round]);
    // Every timed forward of a series runs on that series' slots alone: the first's two, the second's one.
    for (const name of ['T', 'd']) {
      const own = calls.filter((c) => c.model === name);
      const [first, second] = [own[0].slots, own[1].slots];
      expect(first).toHaveLength(2);
      expect(second).toHaveLength(1);
      expect(new Set([...first, ...second]).size).toBe(3);
      for (const [i, c] of own.slice(2).entries()) expect(c.slots.every((slot) => (i % 5 < 2 ? first : second).includes(slot))).toBe(true);
    }
  });

  it("times a step's draft forwards after a target forward against the same forwards without one, and leaves the slots free", async () => {
    const calls: string[] = [];
    const recording = <T extends { forward: (entries: never, outputs: never) => unknown }>(model: T, name: string): T =>
      recordForwards(model, (entries) => calls.push(`${name}${entries.reduce((n, e) => n + e.tokens.length, 0)}`));
    const extra = await measureDraftAfterTarget(recording(pair.target, 'T'), recording(pair.draft, 'd'), { context: 8, verifyTokens: 4, forwards: 3, repeats: 2 });
    expect(extra).toHaveLength(3);
    // Never negative, never rising from one forward to the next.
    for (const [i, ms] of extra.entries()) {
      expect(ms).toBeGreaterThanOrEqual(0);
      if (i > 0) expect(ms).toBeLessThanOrEqual(extra[i - 1]);
    }
    // The contexts, then (untimed pair and two timed) a verification and three one-row draft
    // forwards, then three draft forwards without it.
    const round = ['T4', 'd1', 'd1', 'd1', 'd1', 'd1', 'd1'];
    expect(calls).toEqual(['T8', 'd8', ...round, ...round, ...round]);
    for (const model of [pair.target, pair.draft]) {
      const slots = [0, 1, 2, 3].map(() => model.allocSlot());
      expect(new Set(slots).size).toBe(4);
      for (const s of slots) model.freeSlot(s);
    }
  });

  it('a hardware profile of both curves reads back, drives the measured clock, and names what a run would misprice', async () => {
    const options = { tokenCounts: [1, 2, 4, 8, 16, 32], repeats: 1, slots: 4, context: 4 };
    const measured: HardwareProfile = HardwareProfileSchema.parse({
      kind: 'echo-hw-profile',
      version: 1,
      createdAt: new Date().toISOString(),
      host: { cpu: 'test', threads: 1, provider: 'cpu' },
      models: { draft: pair.draftDir, target: pair.targetDir },
      draftPrecision: 'int8',
      slots: options.slots,
      context: options.context,
      target: await measureForwardCurve(pair.target, options),
      draft: await measureForwardCurve(pair.draft, options),
      draftAfterTargetMs: [0.3, 0.1],
    });
    const profile = parseHardwareProfile(JSON.parse(JSON.stringify(measured)));
    expect(profile).toEqual(measured);
    expect(() => parseHardwareProfile({ ...profile, draftAfterTargetMs: [-1] }, 'hw.json')).toThrow(/^hw\.json: not a valid hardware profile: draftAfterTargetMs\.0/);
    expect(clockFromSpec('curves', profile).label).toContain("a step's draft forwards after the target's +0.30, +0.10 ms");
    // Profiles from before the precisions were recorded read as float32 for both models.
    const { draftPrecision: _d, targetPrecision: _t, ...older } = profile;
    expect(parseHardwareProfile(older)).toMatchObject({ draftPrecision: 'float32', targetPrecision: 'float32' });
    // Its draft forwards are priced by their rows and their requests, as the profile spread them.
    expect(clockFromSpec('measured', profile).label).toMatch(new RegExp(`measured T_ver fit.*draft forward from its measured curve \\(1–32 rows over up to ${profile.slots} requests\\)`));
    expect(() => parseHardwareProfile({ ...profile, target: [] }, 'hw.json')).toThrow(/^hw\.json: not a valid hardware profile: target/);
    expect(() => parseHardwareProfile({ ...profile, targetPrecision: 'fp16' }, 'hw.json')).toThrow(/^hw\.json: not a valid hardware profile: targetPrecision/);
    const file = join(pair.targetDir, '..', 'hw.json');
    writeFileSync(file, JSON.stringify(profile));
    expect(loadHardwareProfile(file)).toEqual(profile);
    expect(() => loadHardwareProfile(join(pair.targetDir, 'missing.json'))).toThrow(/cannot read hardware profile/);
    // A run it would misprice is told so: more requests than the profile spread its rows over, other weights, another window.
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8' })).toEqual([]);
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8', targetPrecision: 'float32' })).toEqual([]);
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8', draftWindow: { sink: 4, recent: 16 } })).toEqual([
      'note: the hardware profile timed the draft with attention window none and this run gives it 4:16 (profile-hw --draft-window 4:16)',
    ]);
    // Another pair's profile: named by folder, wherever the folders are.
    const same = { draft: join('/elsewhere', basename(profile.models.draft)), target: join('/elsewhere', basename(profile.models.target)) };
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8', models: same })).toEqual([]);
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8', models: { ...same, target: '/models/llama-8b' } })).toEqual([
      `note: the hardware profile timed the target ${basename(profile.models.target)} and this run's is llama-8b: its times and prices are another model's (profile-hw --target /models/llama-8b)`,
    ]);
    // A head run priced by a draft model's profile is told so; by its own head's profile, not.
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8', draftKind: 'head', models: { ...same, draft: '/models/echo-demo-head' } })).toEqual([
      `note: the hardware profile timed the draft ${basename(profile.models.draft)} and this run drafts with the EAGLE-3 head echo-demo-head: its drafting is priced and modelled as another model's (profile-hw --draft /models/echo-demo-head)`,
    ]);
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8', draftKind: 'head', models: same })).toEqual([]);
    expect(profileMismatches(profile, { batch: 64, draftPrecision: 'float32', targetPrecision: 'int8' })).toEqual([
      'note: the hardware profile spread its rows over 4 requests and this run packs up to 64: draft and target forwards over more requests cost more, so the times and prices it gives them are low (profile-hw --slots 64)',
      'note: the hardware profile timed the target in float32 and this run loads it in int8 (profile-hw --target-precision int8)',
      'note: the hardware profile timed the draft in int8 and this run loads it in float32 (profile-hw --draft-precision float32)',
    ]);
  });
});
