import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportPerfetto, toPerfetto, type TraceEvent } from '../../../src/output/trace/export-perfetto.js';
import type { TraceContents } from '../../../src/engine/trace/parse.js';
import { tempDir, testHeader, testRun } from '../../engine/trace/fixtures.js';

const trace: TraceContents = { header: testHeader(), steps: testRun(), knobs: [] };

describe('Perfetto export', () => {
  it('has the trace-event shape: ph, name, pid, tid, µs timestamps, X durations', () => {
    const out = toPerfetto(trace);
    expect(out.displayTimeUnit).toBe('ms');
    for (const e of out.traceEvents) {
      expect(['X', 'C', 'M', 'i', 's', 'f']).toContain(e.ph);
      expect(typeof e.name).toBe('string');
      expect(e.pid).toBe(1);
      expect(Number.isInteger(e.tid)).toBe(true);
      expect(e.ts).toBeGreaterThanOrEqual(0);
      if (e.ph === 'X') expect(e.dur).toBeGreaterThanOrEqual(0);
      if (e.ph === 'C') expect(Object.values(e.args ?? {}).every((v) => typeof v === 'number')).toBe(true);
    }
  });

  it('gives each request its own named track with draft and verify slices per step', () => {
    const { traceEvents } = toPerfetto(trace);
    const names = traceEvents.filter((e) => e.ph === 'M' && e.name === 'thread_name');
    const requestIds = [...new Set(trace.steps.flatMap((s) => s.requests.map((r) => r.requestId)))];
    expect(names.map((e) => e.args?.name)).toEqual(['engine steps', ...requestIds]);
    expect(new Set(names.map((e) => e.tid)).size).toBe(names.length);
    const tidOf = new Map(names.map((e) => [e.args?.name, e.tid]));
    const requestSteps = trace.steps.flatMap((s) => s.requests.map((r) => ({ s, r })));
    const slices = traceEvents.filter((e) => e.ph === 'X' && e.cat === 'request');
    expect(slices).toHaveLength(2 * requestSteps.length);
    const { s, r } = requestSteps[requestSteps.length - 1];
    const verify = slices.filter((e) => e.tid === tidOf.get(r.requestId) && e.name === 'verify' && e.args?.step === s.step);
    expect(verify).toHaveLength(1);
    // The verify slice sits where the step's verify phase ran: after draft and pack.
    const stepStartUs = (s.t - s.timings.totalMs) * 1000;
    const prefillUs = (s.timings.prefillMs ?? 0) * 1000;
    expect(verify[0].ts).toBeCloseTo(stepStartUs + prefillUs + (s.timings.draftMs + s.timings.packMs) * 1000, 2);
    expect(verify[0].dur).toBeCloseTo(s.timings.verifyMs * 1000, 2);
    expect(verify[0].args?.accepted).toBe(r.accepted.length);
  });

  it('nests the phases inside their step and counts the budget split', () => {
    const { traceEvents } = toPerfetto(trace);
    const engine = traceEvents.filter((e) => e.tid === 0 && e.ph === 'X');
    const steps = engine.filter((e) => e.cat === 'step');
    expect(steps).toHaveLength(trace.steps.length);
    for (const step of steps) {
      const inside = engine.filter((e) => e.cat === 'phase' && e.ts >= step.ts && e.ts + e.dur! <= step.ts + step.dur!);
      const phases = ['draft', 'pack', 'verify', 'commit'];
      const index = Number(step.name.split(' ')[1]);
      expect(inside.map((e) => e.name)).toEqual(trace.steps[index].timings.prefillMs ? ['prefill', ...phases] : phases);
    }
    const budgets = traceEvents.filter((e): e is TraceEvent & { args: Record<string, number> } => e.ph === 'C' && e.name === 'budget');
    expect(budgets).toHaveLength(trace.steps.length);
    budgets.forEach((b, i) => {
      const sum = b.args.roots + b.args.base + b.args.depth + b.args.width + b.args.unused;
      expect(sum).toBe(trace.steps[i].kmax);
    });
  });

  it('draws each budget transfer as a flow from the giver to the receiver', () => {
    const { traceEvents } = toPerfetto(trace);
    const tidOf = new Map(traceEvents.filter((e) => e.name === 'thread_name').map((e) => [e.args?.name, e.tid]));
    const transfers = trace.steps.flatMap((s) => s.transfers);
    expect(transfers.length).toBeGreaterThan(0);
    const starts = traceEvents.filter((e) => e.ph === 's');
    const finishes = traceEvents.filter((e) => e.ph === 'f');
    expect(starts).toHaveLength(transfers.length);
    expect(finishes.map((e) => e.id)).toEqual(starts.map((e) => e.id));
    expect(new Set(starts.map((e) => e.id)).size).toBe(starts.length);
    transfers.forEach((t, i) => {
      expect(starts[i].tid).toBe(tidOf.get(t.from));
      expect(finishes[i].tid).toBe(tidOf.get(t.to));
      expect(finishes[i].bp).toBe('e');
      expect(finishes[i].ts).toBeGreaterThan(starts[i].ts);
    });
  });

  it('writes a file that parses as JSON and equals the in-memory trace', () => {
    const file = path.join(tempDir(), 'run.perfetto.json');
    exportPerfetto(trace, file);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(toPerfetto(trace));
  });
});
