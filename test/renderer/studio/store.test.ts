import { describe, expect, it } from 'vitest';
import { MAX_SEGMENTS, RECENT_STEPS, createStudioStore, viewedStep } from '../../../src/renderer/studio/store.js';
import { sampleRequest, sampleStep } from './fixtures.js';

const frame = (from: number, count: number) => ({
  type: 'frame' as const,
  steps: Array.from({ length: count }, (_, i) => sampleStep(from + i, [sampleRequest()])),
});

describe('studio store', () => {
  it('appends a frame of steps in one update: window, series, texts', () => {
    const store = createStudioStore();
    let updates = 0;
    store.subscribe(() => (updates += 1));
    store.getState().ingest(frame(0, 5));
    const s = store.getState();
    expect(updates).toBe(1);
    expect(s.steps.map((x) => x.step)).toEqual([0, 1, 2, 3, 4]);
    expect(s.latestStep?.step).toBe(4);
    expect(s.points).toHaveLength(5);
    expect(s.texts['3']).toHaveLength(5);
    expect(s.frameCount).toBe(1);
  });

  it("keeps each request's newest MAX_SEGMENTS text segments, in order, and never changes a list it handed out", () => {
    const store = createStudioStore();
    const total = MAX_SEGMENTS + 10;
    let handedOut: readonly unknown[] = [];
    let handedOutLength = 0;
    for (let from = 0; from < total; from += 7) {
      store.getState().ingest(frame(from, Math.min(7, total - from)));
      expect(handedOut).toHaveLength(handedOutLength);
      handedOut = store.getState().texts['3'];
      handedOutLength = handedOut.length;
    }
    const texts = store.getState().texts['3'];
    expect(texts).toHaveLength(MAX_SEGMENTS);
    expect(texts[0].step).toBe(total - MAX_SEGMENTS);
    expect(texts.at(-1)?.step).toBe(total - 1);
    expect(texts.every((t, i) => i === 0 || t.step === texts[i - 1].step + 1)).toBe(true);
  });

  it('keeps a bounded window of whole steps but every point', () => {
    const store = createStudioStore();
    store.getState().ingest(frame(0, RECENT_STEPS + 10));
    expect(store.getState().steps).toHaveLength(RECENT_STEPS);
    expect(store.getState().points).toHaveLength(RECENT_STEPS + 10);
  });

  it('starts clean when step 0 arrives again (a new run or a replay)', () => {
    const store = createStudioStore();
    store.getState().ingest(frame(0, 6));
    store.getState().pinStep(3);
    store.getState().ingest(frame(0, 2));
    expect(store.getState().points).toHaveLength(2);
    expect(store.getState().texts['3']).toHaveLength(2);
    expect(store.getState().pinnedStep).toBeNull();
  });

  it('shows the pinned step while it is in the window, else the newest', () => {
    const store = createStudioStore();
    store.getState().ingest(frame(0, 6));
    store.getState().pinStep(2);
    expect(viewedStep(store.getState())?.step).toBe(2);
    store.getState().pinStep(99);
    expect(viewedStep(store.getState())?.step).toBe(5);
  });

  it('tracks progress until a task completes and keeps engine errors for the user', () => {
    const store = createStudioStore();
    store.getState().ingest({ type: 'progress', task: 'model load', done: 1, total: 4 });
    expect(store.getState().progress['model load']).toEqual({ task: 'model load', done: 1, total: 4, message: undefined });
    store.getState().ingest({ type: 'progress', task: 'model load', done: 4, total: 4 });
    expect(store.getState().progress['model load']).toBeUndefined();
    store.getState().ingest({ type: 'error', message: 'draft model not found', detail: '/models/x' });
    store.getState().ingest({ type: 'error', message: 'draft model not found', detail: '/models/x' });
    const errors = store.getState().errors;
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ message: 'draft model not found', detail: '/models/x' });
    store.getState().dismissError(errors[0].id);
    expect(store.getState().errors).toHaveLength(0);
  });

  it('follows run state and status events', () => {
    const store = createStudioStore();
    store.getState().ingest({ type: 'status', version: '0.1.0', bundledModels: [], provider: 'cpu', runState: 'idle' });
    store.getState().ingest({ type: 'run.state', state: 'running' });
    expect(store.getState().runState).toBe('running');
    expect(store.getState().status?.provider).toBe('cpu');
  });

  it('snapshots the current series for compare mode', () => {
    const store = createStudioStore();
    store.getState().ingest(frame(0, 3));
    store.getState().keepForCompare('static');
    store.getState().ingest(frame(0, 1));
    expect(store.getState().compare?.label).toBe('static');
    expect(store.getState().compare?.points).toHaveLength(3);
    expect(store.getState().compare?.metrics).toBeNull(); // the frames here carried none
    expect(store.getState().points).toHaveLength(1);
  });
});
