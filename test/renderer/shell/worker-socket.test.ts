// The WebSocket transport over its socket worker: the worker's side (decode.ts) parses, validates
// and thins frames; the page's side (WorkerSocket) hands the transport ready events. A fake worker
// stands in for the browser's, running the same decode function on the text a host would send.
import { describe, expect, it, vi } from 'vitest';
import { createStudioStore } from '../../../src/renderer/studio/store.js';
import { decodeIncoming } from '../../../src/renderer/transport/decode.js';
import { FRAME_MIN_INTERVAL_MS, FramePacer, mergeFrames } from '../../../src/renderer/transport/frame-pacer.js';
import { frameFromText, frameToText } from '../../../src/renderer/transport/frame-text.js';
import type { DeliveredFrame } from '../../../src/renderer/studio/digest.js';
import type { FromSocketWorker, ToSocketWorker } from '../../../src/renderer/transport/socket-worker-protocol.js';
import type { ConnectionInfo } from '../../../src/renderer/transport/types.js';
import { WebSocketTransport } from '../../../src/renderer/transport/websocket.js';
import { WorkerSocket, type WorkerLike } from '../../../src/renderer/transport/worker-socket.js';
import { encodeMessage, type EngineEvent } from '../../../src/shared/messages.js';
import { sampleRequest, sampleStep } from '../studio/fixtures.js';
import { SyntheticRun } from '../studio/syntheticSteps.js';

class FakeWorker implements WorkerLike {
  onmessage: ((message: { data: FromSocketWorker }) => void) | null = null;
  onerror: ((error: { message?: string }) => void) | null = null;
  readonly received: ToSocketWorker[] = [];
  terminated = false;
  postMessage(message: ToSocketWorker): void {
    this.received.push(message);
  }
  terminate(): void {
    this.terminated = true;
  }
  /** What the worker posts after decoding `text` from the host. */
  hostSends(text: string): void {
    const event = decodeIncoming(text);
    // As the socket worker posts them: frames as JSON text, other events as they are.
    if (event) this.onmessage?.({ data: event.type === 'frame' ? { type: 'frame', text: frameToText(event) } : { type: 'event', event } });
  }
  post(message: FromSocketWorker): void {
    this.onmessage?.({ data: message });
  }
}

const steps = [4, 5, 6].map((i) => sampleStep(i, [sampleRequest(), sampleRequest({ requestId: '9' })]));

function connected(): { transport: WebSocketTransport; worker: FakeWorker; events: EngineEvent[]; links: ConnectionInfo[] } {
  const workers: FakeWorker[] = [];
  const transport = new WebSocketTransport('ws://127.0.0.1:1/ws?token=t', (url) =>
    new WorkerSocket(url, () => {
      const worker = new FakeWorker();
      workers.push(worker);
      return worker;
    }),
  );
  const events: EngineEvent[] = [];
  const links: ConnectionInfo[] = [];
  transport.onEvent((e) => events.push(e));
  transport.onConnection((c) => links.push(c));
  transport.connect();
  const worker = workers[0];
  worker.post({ type: 'open' });
  return { transport, worker, events, links };
}

describe('decodeIncoming (the socket worker)', () => {
  it('thins a frame of several steps to the newest whole and digests of the others', () => {
    const event = decodeIncoming(encodeMessage({ type: 'frame', steps }));
    expect(event?.type).toBe('frame');
    const frame = event as Extract<EngineEvent, { type: 'frame' }> & { digests?: Array<{ step: number }> };
    expect(frame.steps.map((s) => s.step)).toEqual([6]);
    expect(frame.digests?.map((d) => d.step)).toEqual([4, 5]);
  });

  it('turns an unreadable message into an error event', () => {
    expect(decodeIncoming('{"type":"frame","steps":[{"step":-1}]}')).toMatchObject({ type: 'error', message: expect.stringContaining('cannot read') });
    expect(decodeIncoming('not json')).toMatchObject({ type: 'error', message: expect.stringContaining('not JSON') });
  });
});

describe('WebSocketTransport over the socket worker', () => {
  it('opens the socket in the worker, greets the host and sends requests through it', () => {
    const { transport, worker, links } = connected();
    expect(worker.received[0]).toEqual({ type: 'open', url: 'ws://127.0.0.1:1/ws?token=t' });
    expect(links.at(-1)).toEqual({ state: 'connected' });
    expect(worker.received[1]).toEqual({ type: 'send', text: encodeMessage({ type: 'hello' }) });
    transport.send({ type: 'trace.seek', step: 3 });
    expect(worker.received.at(-1)).toEqual({ type: 'send', text: encodeMessage({ type: 'trace.seek', step: 3 }) });
    transport.close();
  });

  it('posts frames as text that parses back to the same frame, -Infinity log-probabilities included', () => {
    const impossible = sampleRequest({ requestId: '7' });
    impossible.nodes[2] = { ...impossible.nodes[2], logq: -Infinity, pathScore: -Infinity };
    const frame = decodeIncoming(encodeMessage({ type: 'frame', steps: [steps[0], sampleStep(7, [impossible, sampleRequest()])] })) as DeliveredFrame;
    expect(frame.steps[0].requests[0].nodes[2].logq).toBe(-Infinity);
    const back = frameFromText(frameToText(frame));
    expect(back).toEqual(frame);
    expect(back.steps[0].requests[0].nodes[2].pathScore).toBe(-Infinity);
    // A batch-64 frame of the synthetic run, thinned and merged with digests and histograms.
    const run = new SyntheticRun({ batch: 64, kmax: 512 });
    const merged = mergeFrames(
      decodeIncoming(encodeMessage({ type: 'frame', steps: [run.next(), run.next()] })) as DeliveredFrame,
      decodeIncoming(encodeMessage({ type: 'frame', steps: [run.next(), run.next()], histograms: run.histograms() })) as DeliveredFrame,
    );
    expect(merged.digests).toHaveLength(3);
    expect(frameFromText(frameToText(merged))).toEqual(merged);
  });

  it('delivers the worker-decoded events, and thinned frames build the same store as whole ones', () => {
    const { transport, worker, events } = connected();
    worker.hostSends(encodeMessage({ type: 'frame', steps }));
    expect(events).toHaveLength(1);
    const viaWorker = createStudioStore();
    viaWorker.getState().ingest(events[0]);
    const whole = createStudioStore();
    whole.getState().ingest({ type: 'frame', steps });
    const a = whole.getState();
    const b = viaWorker.getState();
    expect(b.points).toEqual(a.points);
    expect(b.texts).toEqual(a.texts);
    expect(b.gateSteps).toEqual(a.gateSteps);
    expect(b.latestStep?.step).toBe(6);
    transport.close();
  });

  it('reports a worker that fails as a lost link with the reason, and retries', () => {
    const { transport, worker, links } = connected();
    worker.onerror?.({ message: 'blocked by CSP' });
    expect(worker.terminated).toBe(true);
    expect(links.at(-1)?.state).toBe('disconnected');
    expect(links.at(-1)?.detail).toContain('the connection worker failed: blocked by CSP');
    expect(() => transport.send({ type: 'run.pause' })).toThrow('not connected');
    transport.close();
  });
});

describe('FramePacer (the socket worker hands the page one frame at a time)', () => {
  const all = Array.from({ length: 8 }, (_, i) => sampleStep(i, [sampleRequest(), sampleRequest({ requestId: '9' })]));
  const frame = (...steps: typeof all): DeliveredFrame => decodeIncoming(encodeMessage({ type: 'frame', steps })) as DeliveredFrame;
  /** A pacer on a hand-moved clock; `advance` runs the timers that fall due. */
  function clocked(minIntervalMs = FRAME_MIN_INTERVAL_MS) {
    let now = 1000;
    const timers: Array<{ at: number; fn: () => void }> = [];
    const posted: EngineEvent[] = [];
    const pacer = new FramePacer((e) => posted.push(e), {
      minIntervalMs,
      now: () => now,
      schedule: (fn, ms) => void timers.push({ at: now + ms, fn }),
    });
    const advance = (ms: number): void => {
      now += ms;
      for (const due of timers.filter((t) => t.at <= now)) {
        timers.splice(timers.indexOf(due), 1);
        due.fn();
      }
    };
    return { pacer, posted, advance, timers };
  }

  it('holds frames while one is in flight and merges them: every step once, only the newest whole', () => {
    const posted: EngineEvent[] = [];
    const pacer = new FramePacer((e) => posted.push(e), { minIntervalMs: 0 });
    pacer.push(frame(all[0], all[1]));
    pacer.push(frame(all[2], all[3]));
    pacer.push(frame(all[4]));
    pacer.push(frame(all[5], all[6]));
    expect(posted).toHaveLength(1);
    pacer.ack();
    expect(posted).toHaveLength(2);
    const merged = posted[1] as DeliveredFrame;
    expect(merged.steps.map((s) => s.step)).toEqual([6]);
    expect(merged.digests?.map((d) => d.step)).toEqual([2, 3, 4, 5]);
    // The store ends up as if it had every step whole.
    const paced = createStudioStore();
    for (const e of posted) paced.getState().ingest(e);
    const whole = createStudioStore();
    whole.getState().ingest({ type: 'frame', steps: all.slice(0, 7) });
    expect(paced.getState().points).toEqual(whole.getState().points);
    expect(paced.getState().texts).toEqual(whole.getState().texts);
    expect(paced.getState().gateSteps).toEqual(whole.getState().gateSteps);
    expect(paced.getState().latestStep?.step).toBe(6);
  });

  it('sends a held frame before any other event, so a run state never overtakes its last steps', () => {
    const { pacer, posted } = clocked();
    pacer.push(frame(all[0]));
    pacer.push(frame(all[1]));
    pacer.push({ type: 'run.state', state: 'finished' });
    expect(posted.map((e) => e.type)).toEqual(['frame', 'frame', 'run.state']);
    expect((posted[1] as DeliveredFrame).steps[0].step).toBe(1);
  });

  it('drops held steps of an old run when a frame from step 0 arrives (new run or replay)', () => {
    const posted: EngineEvent[] = [];
    const pacer = new FramePacer((e) => posted.push(e), { minIntervalMs: 0 });
    pacer.push(frame(all[5]));
    pacer.push(frame(all[6]));
    pacer.push(frame(all[0], all[1]));
    pacer.ack();
    const replay = posted[1] as DeliveredFrame;
    expect(replay.digests?.map((d) => d.step)).toEqual([0]);
    expect(replay.steps.map((s) => s.step)).toEqual([1]);
  });

  it('posts at most one frame per interval even when the page acks at once; held steps arrive merged', () => {
    const { pacer, posted, advance } = clocked(66);
    pacer.push(frame(all[0]));
    pacer.ack();
    advance(16);
    pacer.push(frame(all[1], all[2]));
    pacer.ack();
    advance(16);
    pacer.push(frame(all[3]));
    // The page took the first frame at once, but the interval has not passed: the rest is held.
    expect(posted).toHaveLength(1);
    advance(33);
    expect(posted).toHaveLength(1);
    advance(1);
    expect(posted).toHaveLength(2);
    const merged = posted[1] as DeliveredFrame;
    expect(merged.steps.map((s) => s.step)).toEqual([3]);
    expect(merged.digests?.map((d) => d.step)).toEqual([1, 2]);
    // A frame after a quiet spell longer than the interval goes at once.
    pacer.ack();
    advance(200);
    pacer.push(frame(all[4]));
    expect(posted).toHaveLength(3);
    expect((posted[2] as DeliveredFrame).steps[0].step).toBe(4);
  });

  it('still waits for the ack when the interval has passed', () => {
    const { pacer, posted, advance } = clocked(66);
    pacer.push(frame(all[0]));
    pacer.push(frame(all[1]));
    advance(500);
    expect(posted).toHaveLength(1);
    pacer.ack();
    expect(posted).toHaveLength(2);
    expect((posted[1] as DeliveredFrame).steps[0].step).toBe(1);
  });

  it('lets a run state through at once, the held frame first, whatever the interval', () => {
    const { pacer, posted, advance, timers } = clocked(66);
    pacer.push(frame(all[0]));
    pacer.ack();
    pacer.push(frame(all[1]));
    pacer.push({ type: 'run.state', state: 'paused' });
    expect(posted.map((e) => e.type)).toEqual(['frame', 'frame', 'run.state']);
    // The timer set for the held frame finds nothing left to send.
    pacer.ack();
    advance(100);
    expect(posted).toHaveLength(3);
    expect(timers).toHaveLength(0);
  });

  it('is acknowledged by the page after each frame it delivers', async () => {
    const { transport, worker } = connected();
    worker.hostSends(encodeMessage({ type: 'frame', steps: [all[0]] }));
    await vi.waitFor(() => expect(worker.received.filter((m) => m.type === 'ack')).toHaveLength(1));
    transport.close();
  });
});
