// The Electron transport's side of the page: frames from the preload bridge reach the store
// thinned and paced like the WebSocket transport's (one frame until the page has drawn it, at most
// one per FRAME_MIN_INTERVAL_MS, the ones between merged). A stand-in bridge delivers the events.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveredFrame } from '../../../src/renderer/studio/digest.js';
import { createStudioStore } from '../../../src/renderer/studio/store.js';
import { ElectronTransport } from '../../../src/renderer/transport/electron.js';
import { FRAME_MIN_INTERVAL_MS, HIDDEN_PAGE_ACK_MS } from '../../../src/renderer/transport/frame-pacer.js';
import type { EngineEvent, PreloadBridge } from '../../../src/shared/messages.js';
import { sampleRequest, sampleStep } from '../studio/fixtures.js';

class FakeBridge {
  private listener: ((event: EngineEvent) => void) | null = null;
  onEvent(listener: (event: EngineEvent) => void): () => void {
    this.listener = listener;
    return () => {
      this.listener = null;
    };
  }
  onLinkState(listener: (state: 'connected') => void): () => void {
    listener('connected');
    return () => {};
  }
  hello(): void {}
  /** What the preload hands the page: an event it validated. */
  deliver(event: EngineEvent): void {
    this.listener?.(event);
  }
}

const steps = Array.from({ length: 8 }, (_, i) => sampleStep(i, [sampleRequest(), sampleRequest({ requestId: '9' })]));
const frame = (...s: typeof steps): EngineEvent => ({ type: 'frame', steps: s });

describe('ElectronTransport (frames from the preload bridge)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function connected() {
    const bridge = new FakeBridge();
    const transport = new ElectronTransport(bridge as unknown as PreloadBridge, { now: () => Date.now() });
    const got: EngineEvent[] = [];
    transport.onEvent((e) => got.push(e));
    transport.connect();
    return { bridge, transport, got };
  }

  it('thins and paces frames: one until the page took it, the ones between merged, every step once', () => {
    const { bridge, transport, got } = connected();
    bridge.deliver(frame(steps[0], steps[1]));
    bridge.deliver(frame(steps[2]));
    bridge.deliver(frame(steps[3], steps[4]));
    expect(got).toHaveLength(1);
    expect((got[0] as DeliveredFrame).steps.map((s) => s.step)).toEqual([1]);
    expect((got[0] as DeliveredFrame).digests?.map((d) => d.step)).toEqual([0]);
    // No animation frames in Node: the page takes the frame after HIDDEN_PAGE_ACK_MS.
    vi.advanceTimersByTime(Math.max(HIDDEN_PAGE_ACK_MS, FRAME_MIN_INTERVAL_MS));
    expect(got).toHaveLength(2);
    const merged = got[1] as DeliveredFrame;
    expect(merged.steps.map((s) => s.step)).toEqual([4]);
    expect(merged.digests?.map((d) => d.step)).toEqual([2, 3]);
    // The store ends up as if every step had come whole.
    const paced = createStudioStore();
    for (const e of got) paced.getState().ingest(e);
    const whole = createStudioStore();
    whole.getState().ingest(frame(...steps.slice(0, 5)));
    expect(paced.getState().points).toEqual(whole.getState().points);
    expect(paced.getState().texts).toEqual(whole.getState().texts);
    expect(paced.getState().latestStep?.step).toBe(4);
    transport.close();
  });

  it('lets other events through at once, after a held frame', () => {
    const { bridge, transport, got } = connected();
    bridge.deliver(frame(steps[0]));
    bridge.deliver(frame(steps[1]));
    bridge.deliver({ type: 'run.state', state: 'finished' });
    expect(got.map((e) => e.type)).toEqual(['frame', 'frame', 'run.state']);
    expect((got[1] as DeliveredFrame).steps[0].step).toBe(1);
    transport.close();
  });

  it('delivers nothing more once closed, not even a held frame', () => {
    const { bridge, transport, got } = connected();
    bridge.deliver(frame(steps[0]));
    bridge.deliver(frame(steps[1]));
    transport.close();
    vi.advanceTimersByTime(10 * HIDDEN_PAGE_ACK_MS);
    expect(got).toHaveLength(1);
  });
});
