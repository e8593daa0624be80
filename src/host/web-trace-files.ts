// Trace files between a browser and the web host. The desktop app opens and exports traces through
// native dialogs; a browser cannot hand over a path on the server, so it uploads the file's bytes
// and downloads an export instead. Both go through the web host's private session folder (made at
// start, removed at close, one of the folders the engine host may use): an upload is checked here,
// saved there and opened by the engine host with trace.open; a download is the engine host's
// trace.export into that folder, streamed back and removed. Refusals are one line and never
// repeat the file's text.
import { closeSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import path from 'node:path';
import { Refusal, TraceFormatError, TraceLineScan } from '../engine/index.js';
import { removeQuietly, temporaryPathBeside } from '../output/index.js';
import { DOWNLOAD_FORMATS, type DownloadFormat } from '../shared/messages.js';

/**
 * Largest trace a browser may upload: a bound on the session folder's disk use. Memory does not
 * limit it: the web host checks an upload as it streams to disk, and the engine host indexes a
 * trace rather than holding it.
 */
export const MAX_TRACE_UPLOAD_BYTES = 1024 * 1024 * 1024;

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
 * Receives an uploaded trace into `folder` as it arrives, checking it line by line on the way (the
 * engine's own trace parser), so neither the file nor its parsed steps are ever held in memory: a
 * file that is not a trace, one cut or damaged part-way, one without steps or one past `limit`
 * bytes is refused (413, 422) as soon as that is known, its partial copy removed, and the rest of
 * the body read and dropped so the refusal reaches the sender. An accepted one is written beside
 * its final name (`SERIAL-NAME`) and renamed into place.
 */
export function receiveUpload(
  req: IncomingMessage,
  { folder, serial, name, limit }: { folder: string; serial: number; name: string; limit: number },
): Promise<{ file: string; steps: number }> {
  mkdirSync(folder, { recursive: true });
  const file = path.join(folder, `${serial}-${name}`);
  const temporary = temporaryPathBeside(file);
  const declared = Number(req.headers['content-length']);
  return new Promise((resolve, reject) => {
    let fd: number | null = null;
    let settled = false;
    const scan = new TraceLineScan();
    const closeFile = () => {
      if (fd !== null) closeSync(fd);
      fd = null;
    };
    const refuse = (err: unknown) => {
      if (settled) return;
      settled = true;
      closeFile();
      removeQuietly(temporary);
      reject(asUploadRefusal(err, name));
    };
    /** The scan's verdict so far: a bad line after the header ends the upload. */
    const checkScan = () => {
      if (scan.error) throw new TraceFileRefusal(422, `${name} is not a whole trace: ${scan.error.message}; nothing was opened`);
    };
    if (Number.isFinite(declared) && declared > limit) refuse(tooLarge(limit));
    else {
      try {
        fd = openSync(temporary, 'wx');
      } catch (err) {
        refuse(err);
      }
    }
    req.on('data', (chunk: Buffer) => {
      if (settled) return; // a refused body is read and dropped
      try {
        if (scan.offset + chunk.length > limit) throw tooLarge(limit);
        scan.push(chunk);
        checkScan();
        writeSync(fd!, chunk);
      } catch (err) {
        refuse(err);
        return;
      }
      // Checking is the slow part: let other clients' requests in before the next chunk.
      req.pause();
      setImmediate(() => req.resume());
    });
    req.on('end', () => {
      if (settled) return;
      try {
        scan.end();
        checkScan();
        if (scan.stepCount === 0) throw new TraceFileRefusal(422, `${name} holds no steps to replay`);
        closeFile();
        renameSync(temporary, file);
        settled = true;
        resolve({ file, steps: scan.stepCount });
      } catch (err) {
        refuse(err);
      }
    });
    req.on('error', (err) => refuse(err));
  });
}

function tooLarge(limit: number): TraceFileRefusal {
  return new TraceFileRefusal(413, `the file is larger than the ${Math.round(limit / (1024 * 1024))} MiB a trace upload may be`);
}

/** A bad header is "not a trace"; refusals stay as they are; anything else is the server's fault. */
function asUploadRefusal(err: unknown, name: string): Error {
  if (err instanceof TraceFileRefusal) return err;
  if (err instanceof TraceFormatError) return new TraceFileRefusal(422, `${name} is not a trace: ${err.message}`);
  return err instanceof Error ? err : new Error(String(err));
}

export function isDownloadFormat(format: string | null): format is DownloadFormat {
  return (DOWNLOAD_FORMATS as readonly string[]).includes(format ?? '');
}
