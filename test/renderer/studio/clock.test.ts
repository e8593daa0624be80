import { describe, expect, it } from 'vitest';
import { clockFromSpec } from '../../../src/engine/cost/clock.js';
import { CLOCK_OPTIONS, defineProfileClock, stepTimer, throughputOf, WALL_CLOCK } from '../../../src/renderer/studio/clock.js';
import { stepPoint } from '../../../src/renderer/studio/series.js';
import { IDENTITY, panBy, toForest, zoomAt } from '../../../src/renderer/studio/viewTransform.js';
import { sampleRequest, sampleStep } from './fixtures.js';

describe('the clock as a knob', () => {
  const steps = [0, 1, 2].map((i) => ({ ...sampleStep(i, [sampleRequest()]), draftRows: [2, 1], draftRequests: [1, 1] }));
  const points = steps.map(stepPoint);

  it("offers the wall clock and the command line's --hw presets", () => {
    expect(CLOCK_OPTIONS[0].id).toBe(WALL_CLOCK);
    expect(CLOCK_OPTIONS.map((o) => o.id)).toContain('h100:70b');
  });

  it("prices each step as the engine's modelled clock does, from the series point alone", () => {
    const clock = clockFromSpec('h100:70b');
    const timer = stepTimer('h100:70b');
    for (let i = 0; i < steps.length; i++) expect(timer(points[i])).toBeCloseTo(clock.stepMs(steps[i]).totalMs, 9);
    const tokens = points.reduce((sum, p) => sum + p.emitted, 0);
    const ms = steps.reduce((sum, s) => sum + clock.stepMs(s).totalMs, 0);
    expect(throughputOf(points, 'h100:70b')).toBeCloseTo((tokens * 1000) / ms, 6);
    expect(throughputOf(points, WALL_CLOCK)).toBeCloseTo((tokens * 1000) / points.reduce((sum, p) => sum + p.totalMs, 0), 6);
  });

  it('a measured profile timed at two contexts times each step at its own past, as the command line does', () => {
    const curve = [1, 8, 64].map((tokens) => ({ tokens, ms: 2 + tokens }));
    const slower = curve.map((p) => ({ tokens: p.tokens, ms: 2 * p.ms }));
    const profile = { name: 'two-contexts', measuredOn: 'Test CPU (cpu)', target: curve, draft: curve, slots: 4, context: 64, longer: [{ context: 128, target: slower, draft: slower }] };
    const { id } = defineProfileClock(profile);
    const clock = clockFromSpec('curves', { ...profile, slots: 4 });
    const timer = stepTimer(id);
    for (const past of [undefined, 64, 96, 200]) {
      const step = { ...steps[0], ...(past === undefined ? {} : { past }) };
      expect(timer(stepPoint(step))).toBeCloseTo(clock.stepMs(step).totalMs, 9);
    }
    expect(timer(stepPoint({ ...steps[0], past: 128 }))).toBeCloseTo(2 * timer(points[0]), 9);
  });
});

describe('zoom and pan of the Super-Tree', () => {
  it('keeps the point under the pointer in place, and never zooms out past the whole forest', () => {
    const view = zoomAt(IDENTITY, 200, 100, 2);
    expect(toForest(view, 200, 100)).toEqual({ x: 200, y: 100 });
    expect(zoomAt(view, 50, 50, 0.1)).toEqual(IDENTITY);
    // Panning stops where the forest's edge meets the canvas's.
    expect(panBy(view, 10_000, 10_000, 400, 300)).toEqual({ scale: 2, x: 0, y: 0 });
    expect(panBy(view, -10_000, -10_000, 400, 300)).toEqual({ scale: 2, x: -400, y: -300 });
  });
});
