import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { computeRunMetrics } from '../../../src/engine/metrics/run-metrics.js';
import { TraceFormatError, parseTrace } from '../../../src/engine/trace/parse.js';
import { readTrace, readTraceStreaming, streamTrace } from '../../../src/engine/trace/read.js';
import { TraceRecorder, TraceWriter } from '../../../src/engine/trace/writer.js';
import type { TraceRecord } from '../../../src/engine/trace/parse.js';
import { tempDir, testHeader, testRun } from './fixtures.js';

function recordRun(file: string) {
  const events = testRun();
  const recorder = new TraceRecorder(file, testHeader());
  recorder.knobs(2, { kmax: 15 });
  for (const e of events) recorder.step(e);
  const metrics = recorder.finish('finished');
  return { events, metrics };
}

async function collect(iterable: AsyncIterable<TraceRecord>): Promise<{ records: TraceRecord[]; error?: unknown }> {
  const records: TraceRecord[] = [];
  try {
    for await (const r of iterable) records.push(r);
  } catch (error) {
    return { records, error };
  }
  return { records };
}

describe('trace JSONL', () => {
  it('round-trips a run: header, steps, knobs and summary come back equal', async () => {
    const file = path.join(tempDir(), 'run.jsonl');
    const { events, metrics } = recordRun(file);
    const trace = await readTrace(file);
    expect(trace.error).toBeUndefined();
    expect(trace.header).toEqual(testHeader());
    expect(trace.steps).toEqual(events);
    expect(trace.knobs).toEqual([{ type: 'knobs', step: 2, knobs: { kmax: 15 } }]);
    expect(trace.summary?.reason).toBe('finished');
    expect(trace.summary?.metrics).toEqual(metrics);
    // The file alone gives the live run's numbers.
    expect(computeRunMetrics(trace.steps, { policy: 'echo' }).metrics).toEqual(metrics);
    expect(await readTraceStreaming(file)).toEqual(trace);
    const lines = readFileSync(file, 'utf8').split('\n');
    expect(lines).toHaveLength(events.length + 4); // header, knobs, steps, summary, final newline
    expect(lines.at(-1)).toBe('');
  });

  it('has each step on disk as soon as it is written, before close', async () => {
    const file = path.join(tempDir(), 'live.jsonl');
    const events = testRun();
    const writer = TraceWriter.open(file, testHeader());
    writer.writeStep(events[0]);
    writer.writeStep(events[1]);
    const midRun = parseTrace(readFileSync(file, 'utf8'));
    expect(midRun.steps).toEqual(events.slice(0, 2));
    expect(midRun.summary).toBeUndefined();
    expect(midRun.error).toBeUndefined();
    writer.abandon();
    expect(() => writer.writeStep(events[2])).toThrow(/already closed/);
  });

  it('replays a file cut mid-line up to the cut and names the cut line', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'run.jsonl');
    const { events } = recordRun(file);
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    // Lines: 1 header, 2 knobs, 3.. steps. Cut in the middle of step 4's line (line 7).
    const cutAt = lines.slice(0, 6).join('\n').length + 1 + Math.floor(lines[6].length / 2);
    const cut = path.join(dir, 'cut.jsonl');
    writeFileSync(cut, text.slice(0, cutAt));
    for (const trace of [await readTrace(cut), await readTraceStreaming(cut)]) {
      expect(trace.steps).toEqual(events.slice(0, 4));
      expect(trace.summary).toBeUndefined();
      expect(trace.error?.line).toBe(7);
      expect(trace.error?.message).toMatch(/line 7 is cut short: the file ends mid-line/);
    }
    const streamed = await collect(streamTrace(cut));
    expect(streamed.records.filter((r) => r.type === 'step')).toHaveLength(4);
    expect(streamed.error).toBeInstanceOf(TraceFormatError);
    expect((streamed.error as TraceFormatError).line).toBe(7);
  });

  it('skips a garbage line in the middle, naming it, and reads every valid line after it, the summary too', async () => {
    const header = JSON.stringify(testHeader());
    const [s0, s1] = testRun();
    const summaryLine = { type: 'summary', endedAt: 'x', reason: 'finished', metrics: computeRunMetrics([s0, s1], { policy: 'echo' }).metrics, histograms: [] };
    const text = [header, JSON.stringify(s0), '{"type":"step", oops', JSON.stringify(s1), JSON.stringify(summaryLine), ''].join('\n');
    const file = path.join(tempDir(), 'garbage.jsonl');
    writeFileSync(file, text);
    for (const broken of [parseTrace(text), await readTraceStreaming(file), await readTrace(file)]) {
      expect(broken.steps).toEqual([s0, s1]);
      expect(broken.summary?.reason).toBe('finished');
      expect(broken.error).toBeUndefined();
      expect(broken.skipped).toEqual([{ line: 3, message: expect.stringMatching(/^line 3 is not valid JSON/) }]);
    }
  });

  it('a last line cut short is the file\'s error, everything before it kept', () => {
    const [s0, s1] = testRun().map((e) => JSON.stringify(e));
    const cut = parseTrace([JSON.stringify(testHeader()), s0, s1.slice(0, 40)].join('\n'));
    expect(cut.steps).toHaveLength(1);
    expect(cut.error).toEqual({ line: 3, message: expect.stringMatching(/^line 3 is cut short/) });
  });

  it('names the field of a step that breaks the schema', () => {
    const [s0, s1] = testRun();
    const bad = structuredClone(s1);
    bad.requests[0].nodes[1].depth = -7;
    const trace = parseTrace([testHeader(), s0, bad].map((x) => JSON.stringify(x)).join('\n') + '\n');
    expect(trace.steps).toEqual([s0]);
    expect(trace.skipped?.[0].line).toBe(3);
    expect(trace.skipped?.[0].message).toMatch(/line 3 \(step\) does not match the trace schema: requests\.0\.nodes\.1\.depth/);
  });

  it('refuses steps out of order, accepted ids outside the tree, and lines after the summary', () => {
    const [s0, s1] = testRun();
    const h = JSON.stringify(testHeader());
    const lines = (...xs: unknown[]) => [h, ...xs.map((x) => JSON.stringify(x))].join('\n') + '\n';
    expect(parseTrace(lines(s1, s0)).skipped?.[0].message).toMatch(/step 0 follows step 1/);
    const wild = structuredClone(s0);
    wild.requests[0].accepted = [99];
    expect(parseTrace(lines(wild)).skipped?.[0].message).toMatch(/accepts node 99, which is not a drafted node/);
    const summaryLine = { type: 'summary', endedAt: 'x', reason: 'stopped', metrics: computeRunMetrics([s0], { policy: 'echo' }).metrics, histograms: [] };
    const after = parseTrace(lines(s0, summaryLine, s1));
    expect(after.summary?.reason).toBe('stopped');
    expect(after.skipped?.[0].message).toMatch(/line 4 comes after the summary line/);
  });

  it('still reads a version 1 file, whose steps carry no confidence signal (path-prob)', () => {
    const [s0, s1] = testRun();
    const v1Steps = [s0, s1].map(({ confidence: _, ...step }) => step);
    const trace = parseTrace([{ ...testHeader(), schemaVersion: 1 }, ...v1Steps].map((x) => JSON.stringify(x)).join('\n') + '\n');
    expect(trace.error).toBeUndefined();
    expect(trace.header.schemaVersion).toBe(1);
    expect(trace.steps.map((s) => s.confidence ?? 'path-prob')).toEqual(['path-prob', 'path-prob']);
  });

  it('reads a file saved with a byte-order mark and CRLF line ends', () => {
    const [s0, s1] = testRun();
    const text = '\uFEFF' + [testHeader(), s0, s1].map((x) => JSON.stringify(x)).join('\r\n') + '\r\n';
    const trace = parseTrace(text);
    expect(trace.error).toBeUndefined();
    expect(trace.steps).toEqual([s0, s1]);
  });

  it('rejects a wrong schema version, a non-trace file and an empty file outright', async () => {
    const v4 = { ...testHeader(), schemaVersion: 4 };
    expect(() => parseTrace(JSON.stringify(v4) + '\n')).toThrow(/trace schema version 4 is not supported: this build reads versions 1, 2 and 3/);
    expect(() => parseTrace('{"hello":1}\n')).toThrow(/line 1 is not an echo-studio-trace header/);
    expect(() => parseTrace('')).toThrow(/the file is empty/);
    const badConfig = { ...testHeader(), config: { ...testHeader().config, kmax: 1 } };
    expect(() => parseTrace(JSON.stringify(badConfig))).toThrow(/line 1 \(header\) is invalid: config\.kmax/);
    const empty = path.join(tempDir(), 'empty.jsonl');
    writeFileSync(empty, '');
    await expect(collect(streamTrace(empty))).resolves.toMatchObject({ error: expect.any(TraceFormatError) });
    await expect(readTrace(path.join(tempDir(), 'missing.jsonl'))).rejects.toThrow(/cannot read trace .*missing\.jsonl: ENOENT/);
    // A folder is one line from every reader, not the stream's raw EISDIR.
    const folder = tempDir();
    const isFolder = /^cannot read trace .*: it is a folder \(or another non-file\), not a trace file$/;
    await expect(readTrace(folder)).rejects.toThrow(isFolder);
    await expect(readTraceStreaming(folder)).rejects.toThrow(isFolder);
    await expect(collect(streamTrace(folder))).resolves.toMatchObject({ error: expect.objectContaining({ message: expect.stringMatching(isFolder) }) });
  });

  it('refuses non-finite numbers and an invalid header at write time', () => {
    const dir = tempDir();
    const writer = TraceWriter.open(path.join(dir, 'nan.jsonl'), testHeader());
    const step = structuredClone(testRun()[0]);
    step.paddingWaste = Number.NaN;
    expect(() => writer.writeStep(step)).toThrow(/field 'paddingWaste' is NaN/);
    const holey = structuredClone(testRun()[1]);
    holey.requests[0].confidences = [0.5];
    holey.requests[0].confidences[2] = 0.25;
    expect(() => writer.writeStep(holey)).toThrow(/array element 1 is missing/);
    writer.abandon();
    expect(() => TraceWriter.open(path.join(dir, 'h.jsonl'), { ...testHeader(), createdAt: 5 as unknown as string })).toThrow(
      /trace header is invalid at createdAt/,
    );
  });
});
