import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { FrameCoalescer, type FrameClock } from '../../src/host/frame-coalescer.js';
import type { FrameEvent } from '../../src/shared/messages.js';
import { sampleStep } from '../shared/fixtures.js';

/** A clock the test moves by hand, so no assertion depends on real time. */
class ManualClock implements FrameClock {
  time = 0;
  private timers: Array<{ at: number; callback: () => void; cancelled: boolean }> = [];
  now() {
    return this.time;
  }
  schedule(callback: () => void, delayMs: number) {
    const timer = { at: this.time + delayMs, callback, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }
  advance(ms: number) {
    this.time += ms;
    const due = this.timers.filter((t) => !t.cancelled && t.at <= this.time);
    this.timers = this.timers.filter((t) => !due.includes(t));
    for (const t of due) t.callback();
  }
}

describe('FrameCoalescer', () => {
  it('sends the first step at once and batches the rest into the next frame', () => {
    const clock = new ManualClock();
    const frames: FrameEvent[] = [];
    const coalescer = new FrameCoalescer((f) => frames.push(f), clock, 30);
    coalescer.push(sampleStep(0));
    expect(frames.map((f) => f.steps.map((s) => s.step))).toEqual([[0]]);
    coalescer.push(sampleStep(1));
    coalescer.push(sampleStep(2));
    expect(frames).toHaveLength(1);
    clock.advance(34);
    expect(frames.map((f) => f.steps.map((s) => s.step))).toEqual([[0], [1, 2]]);
  });

  it('keeps only the latest histograms and metrics of a frame', () => {
    const clock = new ManualClock();
    const frames: FrameEvent[] = [];
    const coalescer = new FrameCoalescer((f) => frames.push(f), clock, 30);
    coalescer.push(sampleStep(0));
    const h1 = [{ depth: 0, edges: [0, 1], accepted: [1], rejected: [0], auc: null }];
    const h2 = [{ depth: 0, edges: [0, 1], accepted: [2], rejected: [1], auc: 0.5 }];
    coalescer.push(sampleStep(1), { histograms: h1 });
    coalescer.push(null, { histograms: h2 });
    coalescer.flush();
    expect(frames[1].histograms).toEqual(h2);
    expect(frames[1].steps).toHaveLength(1);
    coalescer.flush();
    expect(frames).toHaveLength(2); // nothing queued, nothing sent
  });

  it('delivers every step once, in order, at no more than the frame rate', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 200 }), (gaps) => {
        const clock = new ManualClock();
        const frames: Array<{ at: number; frame: FrameEvent }> = [];
        const coalescer = new FrameCoalescer((frame) => frames.push({ at: clock.now(), frame }), clock, 30);
        gaps.forEach((gap, i) => {
          clock.advance(gap);
          coalescer.push(sampleStep(i));
        });
        clock.advance(1000);
        const delivered = frames.flatMap((f) => f.frame.steps.map((s) => s.step));
        expect(delivered).toEqual(gaps.map((_, i) => i));
        for (let i = 1; i < frames.length; i++) {
          expect(frames[i].at - frames[i - 1].at).toBeGreaterThanOrEqual(1000 / 30 - 1e-9);
        }
      }),
    );
  });

  it('refuses a non-positive frame rate', () => {
    expect(() => new FrameCoalescer(() => {}, undefined, 0)).toThrow(/positive/);
  });
});
