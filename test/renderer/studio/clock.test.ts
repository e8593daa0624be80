import { describe, expect, it } from 'vitest';
import { clockFromSpec } from '../../../src/engine/cost/clock.js';
import { CLOCK_OPTIONS, stepTimer, throughputOf, WALL_CLOCK } from '../../../src/renderer/studio/clock.js';
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
