import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autoSignal, calibratePair, calibrateSamples, collectWarmupSamples, warmupProgressLog } from '../../../src/engine/run/warmup';
import { loadFixturePair, randomPrompts, type FixturePair } from '../fixtures/pair';
import { MAX_BINS, SAMPLES_PER_BIN } from '../../../src/engine/calibrate/acceptance';

describe('calibration warm-up on a real (random, perturbed) pair', () => {
  let pair: FixturePair;
  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: 8 });
  });
  afterAll(async () => pair?.release());

  /** A small calibration of depths 0–2 on 12 random prompts. */
  const calibrationOptions = () => ({
    target: pair.target,
    draft: pair.draft,
    workload: randomPrompts(12, 8),
    eosTokenIds: [],
    depth: 3,
    batch: 4,
    maxNewTokens: 16,
    maxLength: pair.target.maxLength,
    delta: 0.6,
    minSamples: 3,
    models: { draft: 'draft', target: 'target' },
    domain: 'random',
  });

  it('labels every drafted depth, with acceptance thinning out as depth grows', async () => {
    const samples = await collectWarmupSamples({
      target: pair.target,
      draft: pair.draft,
      workload: randomPrompts(12, 7),
      eosTokenIds: [],
      depth: 4,
      batch: 4,
      maxNewTokens: 16,
      maxLength: pair.target.maxLength,
    });
    expect(samples.prompts).toBe(12);
    // Several requests per step, at most the batch.
    expect(samples.steps).toBeGreaterThan(0);
    expect(samples.requestSteps).toBeGreaterThan(samples.steps);
    expect(samples.requestSteps).toBeLessThanOrEqual(4 * samples.steps);
    const counts = [0, 1, 2, 3].map((d) => samples.accumulator.samples(d));
    for (const c of counts) expect(c.accepted.length + c.rejected.length).toBeGreaterThan(0);
    const acceptedShare = counts.map((c) => c.accepted.length / (c.accepted.length + c.rejected.length));
    expect(acceptedShare[0]).toBeGreaterThan(acceptedShare[3]);
    // The accepted path reaching depth d means it reached every shallower depth.
    for (let d = 1; d < 4; d++) expect(counts[d].accepted.length).toBeLessThanOrEqual(counts[d - 1].accepted.length);

    const depths = calibrateSamples(samples, { depth: 4, delta: 0.6, minSamples: 3 });
    expect(depths.map((d) => d.depth)).toEqual([0, 1, 2, 3]);
    expect(depths[0].auc).not.toBeNull();
    // The root layer's confidence tells accepted from rejected on this pair.
    expect(depths[0].auc!).toBeGreaterThan(0.5);
  });

  it('collects the root layer in either signal: under path-margin its best path holds at least half the top-two mass', async () => {
    const collect = (confidence: 'path-prob' | 'path-margin') =>
      collectWarmupSamples({
        target: pair.target,
        draft: pair.draft,
        workload: randomPrompts(6, 9),
        eosTokenIds: [],
        depth: 2,
        batch: 3,
        maxNewTokens: 8,
        maxLength: pair.target.maxLength,
        confidence,
      });
    const root = (s: Awaited<ReturnType<typeof collect>>) => {
      const { accepted, rejected } = s.accumulator.samples(0);
      return [...Array.from(accepted), ...Array.from(rejected)];
    };
    const margin = root(await collect('path-margin'));
    const prob = root(await collect('path-prob'));
    expect(margin.length).toBeGreaterThan(0);
    for (const c of margin) expect(c).toBeGreaterThanOrEqual(0.5);
    // The random draft spreads its mass: its probabilities stay far below one half.
    expect(Math.max(...prob)).toBeLessThan(0.5);
  });

  it('logs warm-up progress only once its interval has passed since the start or the last line', () => {
    const lines: string[] = [];
    let clock = 0;
    const report = warmupProgressLog((line) => lines.push(line), 2000, () => clock);
    clock = 1500;
    report(3, 48);
    expect(lines).toEqual([]);
    clock = 2100;
    report(5, 48);
    clock = 3000;
    report(6, 48);
    clock = 4200;
    report(9, 48);
    expect(lines).toEqual(['warm-up: 5 of 48 prompt runs finished (2 s)', 'warm-up: 9 of 48 prompt runs finished (4 s)']);
  });

  it("auto keeps the paper's signal unless another separates clearly better", () => {
    const m = (prob: number | null, margin: number | null) => [
      { confidence: 'path-prob' as const, meanAuc: prob },
      { confidence: 'path-margin' as const, meanAuc: margin },
    ];
    expect(autoSignal(m(0.63, 0.67))).toBe('path-margin');
    expect(autoSignal(m(0.63, 0.635))).toBe('path-prob');
    expect(autoSignal(m(0.9, 0.86))).toBe('path-prob');
    expect(autoSignal(m(null, 0.6))).toBe('path-margin');
    expect(autoSignal([{ confidence: 'path-margin', meanAuc: 0.5 }])).toBe('path-margin');
    expect(() => autoSignal([])).toThrow(/no measured signal/);
  });

  it('measures every signal and keeps what auto picks unless told which', async () => {
    const options = calibrationOptions();
    const progress: [number, number][] = [];
    const auto = await calibratePair({ ...options, onProgress: (done, total) => progress.push([done, total]) });
    // One warm-up per signal, counted together: prompts finished climb to both warm-ups' prompts.
    const total = 2 * options.workload.length;
    expect(progress.every(([, t]) => t === total)).toBe(true);
    expect(progress.map(([d]) => d)).toEqual(progress.map(([d]) => d).sort((a, b) => a - b));
    expect(progress.at(-1)).toEqual([total, total]);
    expect(progress.some(([d]) => d === options.workload.length)).toBe(true);
    expect(auto.signals?.map((s) => s.confidence)).toEqual(['path-prob', 'path-margin']);
    const best = autoSignal(auto.signals!);
    expect(auto.confidence).toBe(best);
    const other = best === 'path-prob' ? 'path-margin' : 'path-prob';
    const told = await calibratePair({ ...options, keep: other });
    expect(told.confidence).toBe(other);
    expect(told.signals).toEqual(auto.signals);
    // The kept profile's depths are that signal's calibration.
    const aucs = auto.depths.flatMap((d) => (d.auc === null ? [] : [d.auc]));
    const kept = auto.signals!.find((x) => x.confidence === best)!;
    expect(aucs.reduce((a, b) => a + b, 0) / aucs.length).toBeCloseTo(kept.meanAuc!, 10);
    const margin = await calibratePair({ ...options, signals: ['path-margin'] });
    expect(margin.confidence).toBe('path-margin');
    expect(margin.signals?.map((s) => s.confidence)).toEqual(['path-margin']);
    await expect(calibratePair({ ...options, signals: ['path-margin'], keep: 'path-prob' })).rejects.toThrow(/cannot keep path-prob: it was not measured/);
  });

  it('writes a profile whose sweet spots have τ and whose sample counts add up', async () => {
    const profile = await calibratePair(calibrationOptions());
    expect(profile.targetDepth).toBe(2);
    for (const [depth, tau] of Object.entries(profile.taus)) {
      const entry = profile.depths[Number(depth)];
      expect(entry.sweetSpot).toBe(true);
      expect(entry.tau!).toBeCloseTo(tau, 3);
    }
    for (const d of profile.depths) {
      expect(d.histogram.accepted.reduce((a, b) => a + b, 0)).toBe(d.accepted);
      expect(d.histogram.rejected.reduce((a, b) => a + b, 0)).toBe(d.rejected);
      // The draft price's curve: one rate per bin of about equal sample counts, never falling.
      const curve = d.acceptance!;
      expect(curve.rates).toHaveLength(curve.edges.length - 1);
      expect(curve.rates.length).toBeGreaterThanOrEqual(1);
      expect(curve.rates.length).toBeLessThanOrEqual(Math.max(1, Math.min(MAX_BINS, Math.floor((d.accepted + d.rejected) / SAMPLES_PER_BIN))));
      for (let b = 1; b < curve.rates.length; b++) expect(curve.rates[b]).toBeGreaterThanOrEqual(curve.rates[b - 1]);
    }
  });
});
