import { describe, expect, it } from 'vitest';
import { digestStep, thinFrame } from '../../../src/renderer/studio/digest.js';
import { stepPoint } from '../../../src/renderer/studio/series.js';
import { createStudioStore } from '../../../src/renderer/studio/store.js';
import { sampleRequest, sampleStep } from './fixtures.js';

describe('step digests', () => {
  const steps = [0, 1, 2].map((i) => sampleStep(i, [sampleRequest(), sampleRequest({ requestId: '9' })]));

  it('keep the point, the gate checks and the text of a step without its trees', () => {
    const d = digestStep(steps[1]);
    expect(d.point).toEqual(stepPoint(steps[1]));
    expect(d.gates).toEqual({ step: 1, requests: [{ requestId: '3', gates: steps[1].requests[0].gates }, { requestId: '9', gates: steps[1].requests[1].gates }] });
    expect(d.texts[0]).toEqual({ requestId: '3', segment: { step: 1, accepted: ' t1 t3', bonus: ' bonus', acceptedCount: 2 } });
    expect(JSON.stringify(d)).not.toContain('pathScore');
  });

  it('thin a frame to its newest step whole and digests before it', () => {
    const thin = thinFrame(steps);
    expect(thin.steps.map((s) => s.step)).toEqual([2]);
    expect(thin.digests.map((d) => d.step)).toEqual([0, 1]);
  });

  it('give the store the same series, texts and gates as the whole frame', () => {
    const whole = createStudioStore();
    whole.getState().ingest({ type: 'frame', steps });
    const thinned = createStudioStore();
    const thin = thinFrame(steps);
    thinned.getState().ingestFrame(thin.steps, thin.digests);
    const a = whole.getState();
    const b = thinned.getState();
    expect(b.points).toEqual(a.points);
    expect(b.texts).toEqual(a.texts);
    expect(b.gateSteps).toEqual(a.gateSteps);
    expect(b.latestStep).toBe(steps[2]);
    expect(b.steps).toHaveLength(1);
  });
});
