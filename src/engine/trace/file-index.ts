// Random access to the steps of a trace file too large to hold: one validating pass records where
// each step line starts and ends; seeking to a step then reads and parses that line alone. This
// is what replay needs to scrub a long run step by step. The pass keeps a few numbers per step
// (in typed arrays, about 24 bytes a step) and never the file's text, so its memory does not grow
// with the size of the steps; the asynchronous build reads a chunk at a time and lets the event
// loop run between chunks, reports progress and can be cancelled.

import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import type { TraceHeader, TraceKnobs, TraceStep, TraceSummary } from '../../shared/trace-schema.js';
import { StepLineSchema } from '../../shared/trace-schema.js';
import { TraceFormatError, TraceLineParser, type TraceLineError } from './parse.js';
import { Refusal } from '../refusal.js';

const NEWLINE = 0x0a; // never part of a multi-byte UTF-8 sequence, so byte search is safe
const CHUNK_BYTES = 1 << 20;
/** Reads of several step lines at once are at most this long (unless one line is longer). */
const RANGE_READ_BYTES = 1 << 20;

/** A growable list of numbers in a Float64Array: 8 bytes a number, no per-entry objects. */
class NumberList {
  private data = new Float64Array(1024);
  length = 0;
  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Float64Array(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }
  at(index: number): number {
    return this.data[index];
  }
}

/** Opening a trace was cancelled (`signal` aborted) before its index was built. */
export class TraceOpenCancelled extends Refusal {
  constructor(path: string) {
    super(`opening ${path} was cancelled`);
    this.name = 'TraceOpenCancelled';
  }
}

/**
 * The validating pass over a trace's bytes, fed chunk by chunk in file order: splits lines (a line
 * may span chunks), parses each one and keeps only where each step line lies. The web host runs it
 * over an upload as it arrives; the index runs it over a file on disk.
 */
export class TraceLineScan {
  private readonly parser = new TraceLineParser();
  header: TraceHeader | null = null;
  readonly starts = new NumberList();
  readonly ends = new NumberList();
  readonly lines = new NumberList();
  readonly stepNumbers = new NumberList();
  readonly knobs: TraceKnobs[] = [];
  summary: TraceSummary | undefined;
  /**
   * A bad last line without its newline (a write the run did not finish): the scan ends there.
   * A bad complete line elsewhere is skipped (see `skipped`), as TraceCollector does.
   */
  error: TraceLineError | undefined;
  /** Bad complete lines after the header, skipped: every valid line after each was still indexed. */
  readonly skipped: TraceLineError[] = [];
  /** Bytes consumed so far. */
  offset = 0;
  private pending: Buffer[] = [];
  private pendingStart = 0;
  private line = 0;
  private stopped = false;

  /** False once a cut last line was seen: nothing follows it. */
  get ok(): boolean {
    return !this.stopped;
  }

  get stepCount(): number {
    return this.starts.length;
  }

  /** Feeds the next bytes of the file. Throws TraceFormatError for a bad header. */
  push(chunk: Buffer): void {
    if (this.stopped) {
      this.offset += chunk.length;
      return;
    }
    let from = 0;
    for (let i = chunk.indexOf(NEWLINE); i !== -1; i = chunk.indexOf(NEWLINE, i + 1)) {
      const piece = chunk.subarray(from, i);
      const bytes = this.pending.length > 0 ? Buffer.concat([...this.pending, piece]) : piece;
      this.pending = [];
      const ok = this.handle(bytes, this.pendingStart, this.offset + i, true);
      from = i + 1;
      this.pendingStart = this.offset + from;
      if (!ok) {
        this.stopped = true;
        this.offset += chunk.length;
        return;
      }
    }
    if (from < chunk.length) this.pending.push(Buffer.from(chunk.subarray(from)));
    this.offset += chunk.length;
  }

  /** The file ended: a last line without a newline is checked as one cut short. */
  end(): void {
    if (!this.stopped && this.pending.length > 0) {
      this.handle(Buffer.concat(this.pending), this.pendingStart, this.offset, false);
      this.pending = [];
    }
    this.stopped = true;
    if (this.header === null) throw new TraceFormatError(1, 'the file is empty: not a trace');
  }

  private handle(bytes: Buffer, start: number, end: number, terminated: boolean): boolean {
    const line = ++this.line;
    let record;
    try {
      record = this.parser.parse(bytes.toString('utf8'), line, terminated);
    } catch (e) {
      if (!(e instanceof TraceFormatError) || this.header === null) throw e;
      if (terminated) {
        this.skipped.push({ line: e.line, message: e.message });
        return true;
      }
      this.error = { line: e.line, message: e.message };
      return false;
    }
    if (record === null) return true;
    if (record.type === 'header') this.header = record.header;
    else if (record.type === 'step') {
      this.starts.push(start);
      this.ends.push(end);
      this.lines.push(line);
      this.stepNumbers.push(record.step.step);
    } else if (record.type === 'knobs') this.knobs.push(record.knobs);
    else this.summary = record.summary;
    return true;
  }
}

export interface TraceIndexBuildOptions {
  chunkBytes?: number;
  /** Called after each chunk with the bytes read so far and the file's size. */
  onProgress?: (bytesRead: number, totalBytes: number) => void;
  /** Aborting it stops the build with TraceOpenCancelled. */
  signal?: AbortSignal;
}

export class TraceFileIndex {
  private fd: number | null;

  private constructor(
    readonly path: string,
    fd: number,
    private readonly scan: TraceLineScan & { header: TraceHeader },
  ) {
    this.fd = fd;
  }

  get header(): TraceHeader {
    return this.scan.header;
  }
  get knobs(): TraceKnobs[] {
    return this.scan.knobs;
  }
  get summary(): TraceSummary | undefined {
    return this.scan.summary;
  }
  /** A bad last line cut short, if any: the index holds the steps before it. */
  get error(): TraceLineError | undefined {
    return this.scan.error;
  }
  /** Bad complete lines that were skipped; the steps after each are indexed. */
  get skipped(): readonly TraceLineError[] {
    return this.scan.skipped;
  }
  /** The file's size when it was indexed. */
  get bytes(): number {
    return this.scan.offset;
  }

  /**
   * Scan and validate the whole file once, keeping only line positions. Throws TraceFormatError
   * for a bad header; a later bad complete line is skipped (`skipped`), a bad last line cut short
   * ends the index there (`error`).
   */
  static open(path: string, options: { chunkBytes?: number } = {}): TraceFileIndex {
    const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
    const fd = openSync(path, 'r');
    try {
      const scan = new TraceLineScan();
      const chunk = Buffer.alloc(chunkBytes);
      for (;;) {
        const n = readSync(fd, chunk, 0, chunkBytes, scan.offset);
        if (n === 0 || !scan.ok) break;
        scan.push(chunk.subarray(0, n));
      }
      scan.end();
      return new TraceFileIndex(path, fd, scan as TraceLineScan & { header: TraceHeader });
    } catch (e) {
      closeSync(fd);
      throw e;
    }
  }

  /**
   * open, without blocking the event loop: each chunk is read asynchronously (other work runs
   * between chunks), progress is reported per chunk, and `signal` cancels it.
   */
  static async build(path: string, options: TraceIndexBuildOptions = {}): Promise<TraceFileIndex> {
    const chunkBytes = options.chunkBytes ?? CHUNK_BYTES;
    const total = statSync(path).size;
    const handle = await openFile(path, 'r');
    try {
      const scan = new TraceLineScan();
      const chunk = Buffer.alloc(chunkBytes);
      for (;;) {
        if (options.signal?.aborted) throw new TraceOpenCancelled(path);
        const { bytesRead } = await handle.read(chunk, 0, chunkBytes, scan.offset);
        if (bytesRead === 0 || !scan.ok) break;
        scan.push(chunk.subarray(0, bytesRead));
        options.onProgress?.(scan.offset, Math.max(total, scan.offset));
        // A read served from the page cache can resolve before other callbacks get their turn.
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (options.signal?.aborted) throw new TraceOpenCancelled(path);
      scan.end();
      // Steps are read back synchronously (a few lines at a time): keep a plain descriptor.
      return new TraceFileIndex(path, openSync(path, 'r'), scan as TraceLineScan & { header: TraceHeader });
    } finally {
      await handle.close();
    }
  }

  /** Usable steps (those before the first bad line, if any). */
  get stepCount(): number {
    return this.scan.stepCount;
  }

  /** Step numbers of the indexed step lines, in file order. */
  get stepNumbers(): number[] {
    return Array.from({ length: this.stepCount }, (_, i) => this.scan.stepNumbers.at(i));
  }

  /** The step number of the i-th step line. */
  stepNumber(index: number): number {
    return this.scan.stepNumbers.at(index);
  }

  /** Position of the last step numbered ≤ upTo (steps increase); -1 when none. */
  lastIndexAtOrBefore(upTo: number): number {
    let lo = 0;
    let hi = this.stepCount - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (this.stepNumber(mid) <= upTo) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** The i-th step line of the file (0-based position, not the step number), read from disk. */
  readStep(index: number): TraceStep {
    return this.readSteps(index, index + 1)[0];
  }

  /**
   * Step lines from..to-1, read from disk in as few reads as their bytes allow (each read at most
   * about 1 MiB unless one line is longer).
   */
  readSteps(from: number, to: number): TraceStep[] {
    if (this.fd === null) throw new Error(`trace index of ${this.path} is closed`);
    for (const index of [from, to - 1]) {
      if (!Number.isInteger(index) || index < 0 || index >= this.stepCount) {
        throw new Error(`step index ${index} is out of range: the trace has ${this.stepCount} usable steps`);
      }
    }
    const steps: TraceStep[] = [];
    let i = from;
    while (i < to) {
      const start = this.scan.starts.at(i);
      let j = i + 1;
      while (j < to && this.scan.ends.at(j) - start <= RANGE_READ_BYTES) j++;
      const bytes = Buffer.alloc(this.scan.ends.at(j - 1) - start);
      readSync(this.fd, bytes, 0, bytes.length, start);
      for (let k = i; k < j; k++) {
        const line = bytes.subarray(this.scan.starts.at(k) - start, this.scan.ends.at(k) - start).toString('utf8');
        const parsed = StepLineSchema.safeParse(JSON.parse(line));
        // The scan validated this line; a failure now means the file changed underneath.
        if (!parsed.success) throw new Refusal(`line ${this.scan.lines.at(k)} of ${this.path} changed since it was indexed`);
        steps.push(parsed.data);
      }
      i = j;
    }
    return steps;
  }

  /** Bytes of the step lines from..to-1 on disk (newlines included): a frame's size before it is read. */
  stepBytes(from: number, to: number): number {
    return to > from ? this.scan.ends.at(to - 1) - this.scan.starts.at(from) : 0;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
