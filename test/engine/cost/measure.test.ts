import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { executeProfileHw, formatProfileHw } from '../../../src/cli/commands/profile-hw';
import { clockFromSpec } from '../../../src/engine/cost/clock';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadHardwareProfile, measureForwardCurve, parseHardwareProfile, profileMismatches, rowsNeeded } from '../../../src/engine/cost/measure';
import { loadFixturePair, type FixturePair } from '../fixtures/pair';

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

  it('profile-hw measures both models, fits a knee, and its output drives the measured clock', async () => {
    const report = await executeProfileHw({ draft: pair.draftDir, target: pair.targetDir, maxTokens: 32, repeats: 1, slots: 4, context: 4, provider: 'cpu', threads: 1 });
    expect(report.profile.target.map((p) => p.tokens)).toEqual([1, 2, 4, 8, 12, 16, 24, 32]);
    expect(report.profile.draft).toHaveLength(8);
    expect(report.target.kmax).toBeGreaterThanOrEqual(1);
    for (const s of report.suggestions) expect(s.kmax).toBeGreaterThanOrEqual(s.batch);
    expect(formatProfileHw(report)).toMatch(/suggested K_max: batch 1 → \d+/);
    // The flag it prints parses back into the fit: knee, γ, and one draft row in target forwards.
    const flag = /run --verify-cost (\d+):([0-9.e+-]+):([0-9.e+-]+)/.exec(formatProfileHw(report));
    expect(flag).not.toBeNull();
    expect(Number(flag![1])).toBe(report.target.kmax);
    expect(Number(flag![2])).toBeCloseTo(report.target.gamma, 2);
    expect(Number(flag![3])).toBeCloseTo((report.draft.gamma * report.draft.tArMs) / report.target.tArMs, 2);
    // And the draft forward's share of the target's, for run --draft-cost.
    const draftCost = /run --draft-cost ([0-9.e+-]+)/.exec(formatProfileHw(report));
    expect(Number(draftCost![1])).toBeCloseTo(report.draft.tArMs / report.target.tArMs, 2);
    const profile = parseHardwareProfile(JSON.parse(JSON.stringify(report.profile)));
    // The draft is timed as runs load it on CPU, and a profile from before that was recorded reads as float32.
    expect(profile.draftPrecision).toBe('int8');
    const { draftPrecision: _, ...older } = profile;
    expect(parseHardwareProfile(older).draftPrecision).toBe('float32');
    // Its draft forwards are priced by their rows and their requests, as the profile spread them.
    expect(clockFromSpec('measured', profile).label).toMatch(new RegExp(`measured T_ver fit.*draft forward from its measured curve \\(1–32 rows over up to ${profile.slots} requests\\)`));
    expect(() => parseHardwareProfile({ ...profile, target: [] }, 'hw.json')).toThrow(/^hw\.json: not a valid hardware profile: target/);
    const file = join(pair.targetDir, '..', 'hw.json');
    writeFileSync(file, JSON.stringify(profile));
    expect(loadHardwareProfile(file)).toEqual(profile);
    expect(() => loadHardwareProfile(join(pair.targetDir, 'missing.json'))).toThrow(/cannot read hardware profile/);
    // A run it would misprice is told so: more requests than the profile spread its rows over, another draft precision.
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8' })).toEqual([]);
    expect(profileMismatches(profile, { batch: 4, draftPrecision: 'int8', draftWindow: { sink: 4, recent: 16 } })).toEqual([
      'note: the hardware profile timed the draft with attention window none and this run gives it 4:16 (profile-hw --draft-window 4:16)',
    ]);
    expect(profileMismatches(profile, { batch: 64, draftPrecision: 'float32' })).toEqual([
      'note: the hardware profile spread its rows over 4 requests and this run packs up to 64: draft and target forwards over more requests cost more, so the modelled times are low (profile-hw --slots 64)',
      'note: the hardware profile timed the draft in int8 and this run loads it in float32 (profile-hw --draft-precision float32)',
    ]);
  });
});
