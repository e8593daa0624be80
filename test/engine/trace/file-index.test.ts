import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TraceFileIndex, TraceLineScan, TraceOpenCancelled } from '../../../src/engine/trace/file-index.js';
import { TraceRecorder } from '../../../src/engine/trace/writer.js';
import { tempDir, testHeader, testRun } from './fixtures.js';

function recorded(): { file: string; dir: string; events: ReturnType<typeof testRun> } {
  const dir = tempDir();
  const file = path.join(dir, 'run.jsonl');
  const events = testRun();
  const recorder = new TraceRecorder(file, testHeader());
  recorder.knobs(1, { kmax: 15 });
  for (const e of events) recorder.step(e);
  recorder.finish('stopped');
  return { file, dir, events };
}

describe('TraceFileIndex', () => {
  // Chunks of 37 bytes split nearly every line (and the text's multi-byte é) across reads.
  for (const chunkBytes of [37, 1 << 20]) {
    it(`seeks to any step without holding the file (chunks of ${chunkBytes} bytes)`, () => {
      const { file, events } = recorded();
      const index = TraceFileIndex.open(file, { chunkBytes });
      try {
        expect(index.header).toEqual(testHeader());
        expect(index.stepCount).toBe(events.length);
        expect(index.stepNumbers).toEqual(events.map((e) => e.step));
        expect(index.knobs).toHaveLength(1);
        expect(index.summary?.reason).toBe('stopped');
        expect(index.error).toBeUndefined();
        for (const i of [events.length - 1, 0, Math.floor(events.length / 2)]) expect(index.readStep(i)).toEqual(events[i]);
        expect(() => index.readStep(events.length)).toThrow(/step index \d+ is out of range: the trace has \d+ usable steps/);
      } finally {
        index.close();
      }
      expect(() => index.readStep(0)).toThrow(/closed/);
    });
  }

  it('indexes a cut file up to the cut', () => {
    const { file, dir, events } = recorded();
    const text = readFileSync(file, 'utf8');
    const lines = text.split('\n');
    const cut = path.join(dir, 'cut.jsonl');
    // header, knobs, steps 0..2 whole, then half of step 3's line
    writeFileSync(cut, lines.slice(0, 5).join('\n') + '\n' + lines[5].slice(0, 30));
    const index = TraceFileIndex.open(cut, { chunkBytes: 64 });
    expect(index.stepCount).toBe(3);
    expect(index.readStep(2)).toEqual(events[2]);
    expect(index.error).toEqual({ line: 6, message: expect.stringMatching(/line 6 is cut short/) });
    expect(index.summary).toBeUndefined();
    index.close();
  });

  it('skips a garbage line in the middle, names it, and indexes every step and the summary after it', () => {
    const { file, dir, events } = recorded();
    const lines = readFileSync(file, 'utf8').split('\n');
    const damaged = path.join(dir, 'garbage.jsonl');
    // header, knobs, steps 0..2, then garbage where step 3 was, then the rest of the file
    writeFileSync(damaged, [...lines.slice(0, 5), '{"type":"step", garbage', ...lines.slice(6)].join('\n'));
    const index = TraceFileIndex.open(damaged, { chunkBytes: 64 });
    expect(index.skipped).toEqual([{ line: 6, message: expect.any(String) }]);
    expect(index.error).toBeUndefined();
    expect(index.stepCount).toBe(events.length - 1);
    expect(index.readStep(3)).toEqual(events[4]);
    expect(index.readStep(index.stepCount - 1)).toEqual(events.at(-1));
    expect(index.summary).toBeDefined();
    index.close();
  });

  it('builds the same index without blocking: a chunk per turn, progress up to the size, cancellable', async () => {
    const { file, events } = recorded();
    const size = readFileSync(file).length;
    const seen: number[] = [];
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const index = await TraceFileIndex.build(file, { chunkBytes: 4096, onProgress: (read, total) => seen.push(read / total) });
    clearInterval(ticker);
    try {
      expect(index.stepCount).toBe(events.length);
      expect(index.knobs).toHaveLength(1);
      expect(index.summary?.reason).toBe('stopped');
      expect(index.bytes).toBe(size);
      expect(index.readSteps(0, events.length)).toEqual(events);
      expect(index.readSteps(3, 7)).toEqual(events.slice(3, 7));
      expect(index.lastIndexAtOrBefore(events[5].step)).toBe(5);
      expect(index.lastIndexAtOrBefore(-1)).toBe(-1);
      // One progress report per chunk, rising to the whole file; timers ran in between.
      expect(seen.length).toBe(Math.ceil(size / 4096));
      expect(seen.at(-1)).toBe(1);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(turns).toBeGreaterThan(0);
    } finally {
      index.close();
    }
    const controller = new AbortController();
    const cancelled = TraceFileIndex.build(file, { chunkBytes: 4096, signal: controller.signal, onProgress: () => controller.abort() });
    await expect(cancelled).rejects.toBeInstanceOf(TraceOpenCancelled);
  });

  it('scans bytes fed in any pieces (an upload as it arrives) to the same verdict', () => {
    const { file, events } = recorded();
    const bytes = readFileSync(file);
    const scan = new TraceLineScan();
    for (let at = 0; at < bytes.length; at += 13) scan.push(bytes.subarray(at, at + 13));
    scan.end();
    expect(scan.error).toBeUndefined();
    expect(scan.stepCount).toBe(events.length);
    // Cut mid-line: the scan says where, and keeps the steps before it.
    const cut = new TraceLineScan();
    cut.push(bytes.subarray(0, bytes.length - 40));
    cut.end();
    expect(cut.error).toEqual({ line: expect.any(Number), message: expect.stringMatching(/is cut short/) });
  });

  it('refuses a file that is not a trace', () => {
    const file = path.join(tempDir(), 'x.jsonl');
    writeFileSync(file, 'not json\n');
    expect(() => TraceFileIndex.open(file)).toThrow(/line 1 is not valid JSON/);
  });
});
