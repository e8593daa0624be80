import { describe, expect, it } from 'vitest';
import {
  decodeText,
  encodeMessage,
  MAX_MESSAGE_BYTES,
  parseEvent,
  parseRequest,
  REQUEST_METHODS,
  REQUEST_TYPES,
} from '../../src/shared/messages.js';
import { StepLineSchema } from '../../src/shared/trace-schema.js';
import { sampleStep } from './fixtures.js';

describe('requests', () => {
  it('accepts every request type with its fields', () => {
    const config = { policy: 'echo', batch: 4, kmax: 16, requests: 8, maxNewTokens: 32, temperature: 0, seed: 1 };
    const samples = [
      { type: 'hello' },
      { type: 'run.start', config },
      { type: 'run.pause' },
      { type: 'run.resume' },
      { type: 'run.step' },
      { type: 'run.stop' },
      { type: 'knobs.set', knobs: { kmax: 12, taus: { '0': 0.2 } } },
      { type: 'model.open', dir: '/models/pair' },
      { type: 'trace.open', path: '/tmp/a.jsonl' },
      { type: 'trace.export', path: '/tmp/a.parquet', format: 'parquet' },
      { type: 'trace.seek', step: 3 },
      { type: 'trace.cancel' },
      { type: 'hw.knee', batch: 32, targetDir: '/models/target' },
      { type: 'clock.profile', path: '/profiles/gpu.json' },
      { type: 'report.open', dir: '/reports/quick' },
      { type: 'report.quick', draftDir: '/models/draft', targetDir: '/models/target', domains: ['code'], batches: [1, 2], requests: 2, maxNewTokens: 4 },
      { type: 'report.cancel' },
    ];
    expect(samples.map((s) => s.type).sort()).toEqual([...REQUEST_TYPES].sort());
    for (const sample of samples) {
      const parsed = parseRequest(sample);
      expect(parsed, JSON.stringify(sample)).toEqual({ ok: true, value: sample });
    }
  });

  it('refuses unknown types, missing fields and invalid run configs with one readable line', () => {
    const unknown = parseRequest({ type: 'rm -rf' });
    expect(unknown.ok).toBe(false);
    const noDir = parseRequest({ type: 'model.open' });
    expect(noDir).toMatchObject({ ok: false, error: expect.stringContaining('dir') });
    const badFormat = parseRequest({ type: 'trace.export', path: '/x', format: 'xml' });
    expect(badFormat).toMatchObject({ ok: false, error: expect.stringContaining('format') });
    const kmaxBelowBatch = parseRequest({
      type: 'run.start',
      config: { policy: 'echo', batch: 8, kmax: 4, requests: 8, maxNewTokens: 8, temperature: 0, seed: 0 },
    });
    expect(kmaxBelowBatch).toMatchObject({ ok: false, error: expect.stringContaining('K_max (4) is below the batch size (8)') });
    for (const bad of [unknown, noDir, badFormat, kmaxBelowBatch]) {
      if (!bad.ok) expect(bad.error).not.toContain('\n');
    }
    expect(parseRequest(null).ok).toBe(false);
    expect(parseRequest('hello').ok).toBe(false);
  });

  it('names one bridge method per request type, all distinct', () => {
    const methods = Object.values(REQUEST_METHODS);
    expect(Object.keys(REQUEST_METHODS).sort()).toEqual([...REQUEST_TYPES].sort());
    expect(new Set(methods).size).toBe(methods.length);
  });
});

describe('events', () => {
  it('round-trips a frame through JSON, -Infinity log-probabilities included', () => {
    const frame = { type: 'frame' as const, steps: [sampleStep(0), sampleStep(1)] };
    const text = encodeMessage(frame);
    const decoded = decodeText(text);
    expect(decoded.ok).toBe(true);
    const parsed = parseEvent(decoded.ok ? decoded.value : null);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok || parsed.value.type !== 'frame') throw new Error('expected a frame');
    expect(parsed.value.steps).toHaveLength(2);
    expect(parsed.value.steps[0].requests[0].nodes[2].logq).toBe(-Infinity);
    expect(parsed.value.steps[1]).toEqual(sampleStep(1));
  });

  it('carries a step exactly as the trace file stores it: one schema, no field lost in transit', () => {
    const step = { ...sampleStep(3), timings: { ...sampleStep(3).timings, prefillMs: 1.5, modelMs: 2.25 } };
    const parsed = parseEvent(JSON.parse(encodeMessage({ type: 'frame', steps: [step] })));
    if (!parsed.ok || parsed.value.type !== 'frame') throw new Error('expected a frame');
    expect(parsed.value.steps[0].timings).toEqual(step.timings);
    expect(StepLineSchema.parse(JSON.parse(JSON.stringify(step)))).toEqual(parsed.value.steps[0]);
  });

  it('accepts status, progress, run.state and error; refuses a bad run state', () => {
    expect(parseEvent({ type: 'status', version: '0.1.0', bundledModels: [{ name: 'draft', dir: '/m/draft', parameters: 10 }], provider: 'cpu', runState: 'idle' }).ok).toBe(true);
    expect(parseEvent({ type: 'progress', task: 'load', done: 1, total: 2 }).ok).toBe(true);
    expect(parseEvent({ type: 'run.state', state: 'paused' }).ok).toBe(true);
    expect(parseEvent({ type: 'error', message: 'boom' }).ok).toBe(true);
    expect(parseEvent({ type: 'run.state', state: 'sleeping' }).ok).toBe(false);
    expect(parseEvent({ type: 'hw.knee', batch: 32, knee: 30, kmax: 62, tArMs: 1.9, target: '/m/target' }).ok).toBe(true);
    expect(parseEvent({ type: 'hw.knee', batch: 32, knee: 0, kmax: 62, tArMs: 1.9, target: '/m/target' }).ok).toBe(false);
    expect(parseRequest({ type: 'hw.knee', batch: 0 })).toMatchObject({ ok: false, error: expect.stringContaining('batch') });
    const badStep = { ...sampleStep(0), step: -1 };
    expect(parseEvent({ type: 'frame', steps: [badStep] })).toMatchObject({ ok: false, error: expect.stringContaining('steps.0.step') });
  });
});

describe('decodeText', () => {
  it('refuses text that is not JSON or is over the size cap', () => {
    expect(decodeText('{nope')).toMatchObject({ ok: false, error: expect.stringContaining('not JSON') });
    const huge = 'x'.repeat(MAX_MESSAGE_BYTES + 1);
    expect(decodeText(huge)).toMatchObject({ ok: false, error: expect.stringContaining('exceeds') });
  });
});
