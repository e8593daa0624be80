// Validating trace reader, line by line, with no file system: the engine's readers and a browser
// can both use it. A bad line in the middle is skipped and named (1-based), and reading goes on;
// a last line cut short (the run stopped while writing it) ends the file as its error.

import {
  BodyLineSchema,
  TRACE_FORMAT,
  READABLE_TRACE_VERSIONS,
  TraceHeaderSchema,
  type TraceHeader,
  type TraceKnobs,
  type TraceStep,
  type TraceSummary,
} from '../../shared/trace-schema.js';
import type { z } from 'zod';
import { jsonErrorPosition } from '../json-error.js';
import { Refusal } from '../refusal.js';

/** The types a trace's body lines may have: an error names a line's type only when it is one of these. */
const BODY_LINE_TYPES: readonly unknown[] = ['step', 'knobs', 'summary'];

export interface TraceLineError {
  /** 1-based line number in the file. */
  line: number;
  message: string;
}

/** A header that cannot be read: nothing in the file is usable. */
export class TraceFormatError extends Refusal {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
    this.name = 'TraceFormatError';
  }
}

export type TraceRecord =
  | { type: 'header'; line: number; header: TraceHeader }
  | { type: 'step'; line: number; step: TraceStep }
  | { type: 'knobs'; line: number; knobs: TraceKnobs }
  | { type: 'summary'; line: number; summary: TraceSummary };

export interface TraceContents {
  header: TraceHeader;
  steps: TraceStep[];
  /** Knob changes made during the run, in order. */
  knobs: TraceKnobs[];
  /** Absent when the run did not end cleanly (crash, cut file) or reading stopped before it. */
  summary?: TraceSummary;
  /** A last line cut short (the run stopped mid-write); everything before it is kept. */
  error?: TraceLineError;
  /** Bad complete lines, skipped: every valid line after each was still read. Absent: none. */
  skipped?: TraceLineError[];
}

function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  const where = issue.path.length > 0 ? issue.path.join('.') : '(line)';
  return `${where}: ${issue.message}`;
}

/** Consumes a trace's lines in order and turns each into a validated record. */
export class TraceLineParser {
  private header: TraceHeader | null = null;
  private lastStep = -1;
  private sawSummary = false;

  /**
   * Parse line number `line` (1-based). `terminated` is false for a last line with no newline
   * after it, which is how a run cut off mid-write looks. Returns null for a blank line.
   * Throws TraceFormatError for a bad line.
   */
  parse(text: string, line: number, terminated: boolean): TraceRecord | null {
    if (text.trim() === '') return null;
    // A byte-order mark from an editor that saved the file is not part of the JSON.
    if (line === 1 && text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new TraceFormatError(
        line,
        terminated
          ? `line ${line} is not valid JSON${jsonErrorPosition(cause)}`
          : `line ${line} is cut short: the file ends mid-line (the run stopped while writing it)`,
      );
    }
    if (this.header === null) return this.parseHeader(value, line);
    if (this.sawSummary) throw new TraceFormatError(line, `line ${line} comes after the summary line, which must be last`);

    const parsed = BodyLineSchema.safeParse(value);
    if (!parsed.success) {
      // The line's own type only when it is one of ours: an error never repeats a file's text.
      const type = typeof value === 'object' && value !== null && 'type' in value ? value.type : undefined;
      const kind = type === undefined ? 'untyped' : BODY_LINE_TYPES.includes(type as string) ? String(type) : 'of an unknown type';
      throw new TraceFormatError(line, `line ${line} (${kind}) does not match the trace schema: ${describeIssue(parsed.error)}`);
    }
    const record = parsed.data;
    switch (record.type) {
      case 'step':
        this.checkStep(record, line);
        return { type: 'step', line, step: record };
      case 'knobs':
        return { type: 'knobs', line, knobs: record };
      case 'summary':
        this.sawSummary = true;
        return { type: 'summary', line, summary: record };
    }
  }

  private parseHeader(value: unknown, line: number): TraceRecord {
    const object = typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
    if (object.type !== 'header' || object.format !== TRACE_FORMAT) {
      throw new TraceFormatError(line, `line ${line} is not an ${TRACE_FORMAT} header: this is not a trace file`);
    }
    if (!READABLE_TRACE_VERSIONS.includes(object.schemaVersion as number)) {
      throw new TraceFormatError(
        line,
        `trace schema version ${typeof object.schemaVersion === 'number' ? object.schemaVersion : '(not a number)'} is not supported: this build reads versions ${READABLE_TRACE_VERSIONS.slice(0, -1).join(', ')} and ${READABLE_TRACE_VERSIONS[READABLE_TRACE_VERSIONS.length - 1]}`,
      );
    }
    const parsed = TraceHeaderSchema.safeParse(value);
    if (!parsed.success) throw new TraceFormatError(line, `line ${line} (header) is invalid: ${describeIssue(parsed.error)}`);
    this.header = parsed.data;
    return { type: 'header', line, header: parsed.data };
  }

  // Checks the schema cannot express: order, and ids that point inside the request's tree.
  private checkStep(step: TraceStep, line: number): void {
    if (step.step <= this.lastStep) {
      throw new TraceFormatError(line, `line ${line}: step ${step.step} follows step ${this.lastStep}; steps must increase`);
    }
    this.lastStep = step.step;
    for (const request of step.requests) {
      request.nodes.forEach((node, index) => {
        if (node.id !== index) {
          throw new TraceFormatError(line, `line ${line}: request ${request.requestId} node at index ${index} has id ${node.id}; ids must equal their index`);
        }
      });
      for (const id of request.accepted) {
        if (id < 1 || id >= request.nodes.length) {
          throw new TraceFormatError(line, `line ${line}: request ${request.requestId} accepts node ${id}, which is not a drafted node`);
        }
      }
    }
  }
}

/**
 * Collects records into TraceContents. A bad complete line after the header is skipped (one
 * garbage line used to lose every step after it, and the summary); a bad last line without its
 * newline, a write the run did not finish, is the file's `error`.
 */
export class TraceCollector {
  private readonly parser = new TraceLineParser();
  private header: TraceHeader | null = null;
  readonly steps: TraceStep[] = [];
  readonly knobs: TraceKnobs[] = [];
  private summary: TraceSummary | undefined;
  private error: TraceLineError | undefined;
  private readonly skipped: TraceLineError[] = [];

  /** False once a cut last line was seen; later lines are ignored. */
  get ok(): boolean {
    return this.error === undefined;
  }

  /** Throws TraceFormatError only for a bad header (nothing is usable then). */
  add(text: string, line: number, terminated: boolean): void {
    if (this.error) return;
    let record: TraceRecord | null;
    try {
      record = this.parser.parse(text, line, terminated);
    } catch (e) {
      if (!(e instanceof TraceFormatError) || this.header === null) throw e;
      if (terminated) this.skipped.push({ line: e.line, message: e.message });
      else this.error = { line: e.line, message: e.message };
      return;
    }
    if (record === null) return;
    if (record.type === 'header') this.header = record.header;
    else if (record.type === 'step') this.steps.push(record.step);
    else if (record.type === 'knobs') this.knobs.push(record.knobs);
    else this.summary = record.summary;
  }

  result(): TraceContents {
    if (this.header === null) throw new TraceFormatError(1, 'the file is empty: not a trace');
    return {
      header: this.header,
      steps: this.steps,
      knobs: this.knobs,
      ...(this.summary ? { summary: this.summary } : {}),
      ...(this.error ? { error: this.error } : {}),
      ...(this.skipped.length > 0 ? { skipped: this.skipped } : {}),
    };
  }
}

/** Parse a whole trace held in memory. */
export function parseTrace(text: string): TraceContents {
  const collector = new TraceCollector();
  const lines = text.split('\n');
  // After a final newline split() leaves an empty last piece; without one, the last line is cut.
  const lastTerminated = lines[lines.length - 1] === '';
  if (lastTerminated) lines.pop();
  for (let i = 0; i < lines.length && collector.ok; i++) {
    collector.add(lines[i], i + 1, i < lines.length - 1 || lastTerminated);
  }
  return collector.result();
}
