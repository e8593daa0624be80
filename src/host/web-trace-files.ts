// Trace files between a browser and the web host. The desktop app opens and exports traces through
// native dialogs; a browser cannot hand over a path on the server, so it uploads the file's bytes
// and downloads an export instead. Both go through the web host's private session folder (made at
// start, removed at close, one of the folders the engine host may use): an upload is checked here,
// saved there and opened by the engine host with trace.open; a download is the engine host's
// trace.export into that folder, streamed back and removed. Refusals are one line and never
// repeat the file's text.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { removeQuietly, temporaryPathBeside } from '../engine/trace/export-files.js';
import { parseTrace, TraceFormatError } from '../engine/trace/parse.js';
import { DOWNLOAD_FORMATS, type DownloadFormat } from '../shared/messages.js';
import { Refusal } from '../engine/refusal.js';

/** Largest trace a browser may upload (the engine host holds a replayed trace in memory). */
export const MAX_TRACE_UPLOAD_BYTES = 256 * 1024 * 1024;

/** A refusal with the HTTP status that says why. */
export class TraceFileRefusal extends Refusal {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'TraceFileRefusal';
  }
}

/** The uploaded file's name as the user's disk had it, made safe to print and to store. */
export function uploadName(raw: string | null): string {
  const base = path.basename((raw ?? '').replace(/\\/g, '/')).replace(/[^\w.-]+/g, '_').slice(-96);
  return base === '' || /^\.+$/.test(base) ? 'trace.jsonl' : base;
}

/**
 * Reads a request body, refusing it (413) as soon as it passes `limit` bytes; the rest of an
 * oversized body is read and dropped, so the refusal reaches the sender.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const tooLarge = () => new TraceFileRefusal(413, `the file is larger than the ${Math.round(limit / (1024 * 1024))} MiB a trace upload may be`);
  const declared = Number(req.headers['content-length']);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let refused = false;
    const refuse = () => {
      refused = true;
      chunks.length = 0;
      reject(tooLarge());
    };
    if (Number.isFinite(declared) && declared > limit) refuse();
    req.on('data', (chunk: Buffer) => {
      if (refused) return;
      size += chunk.length;
      if (size > limit) refuse();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      if (!refused) resolve(Buffer.concat(chunks));
    });
    req.on('error', (err) => {
      if (!refused) reject(err);
    });
  });
}

/**
 * Checks an uploaded trace whole before anything is kept: a file that is not a trace, or one cut
 * or damaged part-way, is refused with the first problem (its line number, never its text).
 */
export function checkUploadedTrace(bytes: Buffer, name: string): { steps: number } {
  let steps: number;
  try {
    const trace = parseTrace(bytes.toString('utf8'));
    if (trace.error) throw new TraceFileRefusal(422, `${name} is not a whole trace: ${trace.error.message}; nothing was opened`);
    steps = trace.steps.length;
  } catch (err) {
    if (err instanceof TraceFileRefusal) throw err;
    if (err instanceof TraceFormatError) throw new TraceFileRefusal(422, `${name} is not a trace: ${err.message}`);
    throw err;
  }
  if (steps === 0) throw new TraceFileRefusal(422, `${name} holds no steps to replay`);
  return { steps };
}

/** Saves an upload under `folder` with a fresh name: written beside and renamed, never over another file. */
export function saveUpload(folder: string, serial: number, name: string, bytes: Buffer): string {
  mkdirSync(folder, { recursive: true });
  const file = path.join(folder, `${serial}-${name}`);
  const temporary = temporaryPathBeside(file);
  try {
    writeFileSync(temporary, bytes, { flag: 'wx' });
    renameSync(temporary, file);
  } catch (err) {
    removeQuietly(temporary);
    throw err;
  }
  return file;
}

export function isDownloadFormat(format: string | null): format is DownloadFormat {
  return (DOWNLOAD_FORMATS as readonly string[]).includes(format ?? '');
}
