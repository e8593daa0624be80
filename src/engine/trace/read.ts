// Reading trace files from disk: whole (readTrace) or record by record without holding the file
// in memory (streamTrace), both through the same validating line parser.

import { createReadStream, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import {
  TraceCollector,
  TraceFormatError,
  TraceLineParser,
  parseTrace,
  type TraceContents,
  type TraceRecord,
} from './parse.js';
import { Refusal } from '../refusal.js';

/**
 * Read and validate a trace file. Throws TraceFormatError when the header is bad (nothing is
 * usable); a later bad line comes back as `error`, with every record before it kept.
 */
export async function readTrace(path: string): Promise<TraceContents> {
  assertTraceFile(path);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new Refusal(`cannot read trace ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  return parseTrace(text);
}

/**
 * Refuses, in one line, a path that is not a readable file: a folder would otherwise surface as
 * the raw "EISDIR: illegal operation on a directory, read" of the stream.
 */
function assertTraceFile(path: string): void {
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (e) {
    throw new Refusal(`cannot read trace ${path}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`);
  }
  if (!isFile) throw new Refusal(`cannot read trace ${path}: it is a folder (or another non-file), not a trace file`);
}

/** The file's lines with their 1-based numbers, decoding UTF-8 across chunk edges. */
async function* fileLines(path: string): AsyncGenerator<{ text: string; line: number; terminated: boolean }> {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  let line = 0;
  assertTraceFile(path);
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const pieces = (pending + decoder.write(chunk as Buffer)).split('\n');
    pending = pieces.pop()!; // the unfinished tail waits for the next chunk
    for (const text of pieces) yield { text, line: ++line, terminated: true };
  }
  pending += decoder.end();
  if (pending !== '') yield { text: pending, line: ++line, terminated: false };
}

/**
 * Validated records one at a time, for files too large to hold. Throws TraceFormatError at the
 * first bad line, after yielding every record before it.
 */
export async function* streamTrace(path: string): AsyncGenerator<TraceRecord> {
  const parser = new TraceLineParser();
  let sawHeader = false;
  for await (const { text, line, terminated } of fileLines(path)) {
    const record = parser.parse(text, line, terminated);
    if (record === null) continue;
    sawHeader = true;
    yield record;
  }
  if (!sawHeader) throw new TraceFormatError(1, 'the file is empty: not a trace');
}

/** readTrace, but streaming: same result without holding the file's text in memory at once. */
export async function readTraceStreaming(path: string): Promise<TraceContents> {
  const collector = new TraceCollector();
  for await (const { text, line, terminated } of fileLines(path)) {
    collector.add(text, line, terminated);
    if (!collector.ok) break;
  }
  return collector.result();
}
