// Random access to the steps of a trace file too large to hold: one validating pass records where
// each step line starts and ends; seeking to a step then reads and parses that line alone. This
// is what replay needs to scrub a long run step by step.

import { closeSync, openSync, readSync } from 'node:fs';
import type { TraceHeader, TraceKnobs, TraceStep, TraceSummary } from '../../shared/trace-schema.js';
import { StepLineSchema } from '../../shared/trace-schema.js';
import { TraceFormatError, TraceLineParser, type TraceLineError } from './parse.js';
import { Refusal } from '../refusal.js';

interface LineSpan {
  /** Byte offset of the line's first byte. */
  start: number;
  /** Byte offset just past its last byte (newline excluded). */
  end: number;
  line: number;
}

const NEWLINE = 0x0a; // never part of a multi-byte UTF-8 sequence, so byte search is safe
const CHUNK_BYTES = 1 << 20;

export class TraceFileIndex {
  private fd: number | null;

  private constructor(
    readonly path: string,
    fd: number,
    readonly header: TraceHeader,
    private readonly stepSpans: LineSpan[],
    /** Step number of each indexed step line, in file order. */
    readonly stepNumbers: number[],
    readonly knobs: TraceKnobs[],
    readonly summary: TraceSummary | undefined,
    readonly error: TraceLineError | undefined,
  ) {
    this.fd = fd;
  }

  /**
   * Scan and validate the whole file once, keeping only line positions. Throws TraceFormatError
   * for a bad header; a later bad line ends the index there and is reported in `error`.
   */
  static open(path: string, options: { chunkBytes?: number } = {}): TraceFileIndex {
    const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
    const fd = openSync(path, 'r');
    try {
      const parser = new TraceLineParser();
      const spans: LineSpan[] = [];
      const stepNumbers: number[] = [];
      const knobs: TraceKnobs[] = [];
      let header: TraceHeader | null = null;
      let summary: TraceSummary | undefined;
      let error: TraceLineError | undefined;

      const handle = (bytes: Buffer, span: LineSpan, terminated: boolean): boolean => {
        let record;
        try {
          record = parser.parse(bytes.toString('utf8'), span.line, terminated);
        } catch (e) {
          if (!(e instanceof TraceFormatError) || header === null) throw e;
          error = { line: e.line, message: e.message };
          return false;
        }
        if (record === null) return true;
        if (record.type === 'header') header = record.header;
        else if (record.type === 'step') {
          spans.push(span);
          stepNumbers.push(record.step.step);
        } else if (record.type === 'knobs') knobs.push(record.knobs);
        else summary = record.summary;
        return true;
      };

      // Stream the file in chunks; `pending` holds the bytes of a line split across chunks.
      const chunk = Buffer.alloc(chunkBytes);
      let pending: Buffer[] = [];
      let pendingStart = 0;
      let offset = 0;
      let line = 0;
      let reading = true;
      while (reading) {
        const n = readSync(fd, chunk, 0, chunkBytes, offset);
        if (n === 0) break;
        let from = 0;
        for (let i = 0; i < n; i++) {
          if (chunk[i] !== NEWLINE) continue;
          const bytes = Buffer.concat([...pending, chunk.subarray(from, i)]);
          if (!handle(bytes, { start: pendingStart, end: offset + i, line: ++line }, true)) {
            reading = false;
            break;
          }
          pending = [];
          from = i + 1;
          pendingStart = offset + from;
        }
        if (reading && from < n) pending.push(Buffer.from(chunk.subarray(from, n)));
        offset += n;
      }
      if (reading && pending.length > 0) {
        handle(Buffer.concat(pending), { start: pendingStart, end: offset, line: ++line }, false);
      }
      if (header === null) throw new TraceFormatError(1, 'the file is empty: not a trace');
      return new TraceFileIndex(path, fd, header, spans, stepNumbers, knobs, summary, error);
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /** Usable steps (those before the first bad line, if any). */
  get stepCount(): number {
    return this.stepSpans.length;
  }

  /** The i-th step line of the file (0-based position, not the step number), read from disk. */
  readStep(index: number): TraceStep {
    if (this.fd === null) throw new Error(`trace index of ${this.path} is closed`);
    if (!Number.isInteger(index) || index < 0 || index >= this.stepSpans.length) {
      throw new Error(`step index ${index} is out of range: the trace has ${this.stepSpans.length} usable steps`);
    }
    const { start, end, line } = this.stepSpans[index];
    const bytes = Buffer.alloc(end - start);
    readSync(this.fd, bytes, 0, bytes.length, start);
    const parsed = StepLineSchema.safeParse(JSON.parse(bytes.toString('utf8')));
    // The scan validated this line; a failure now means the file changed underneath.
    if (!parsed.success) throw new Refusal(`line ${line} of ${this.path} changed since it was indexed`);
    return parsed.data;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
