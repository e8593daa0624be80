// Writing a trace export to disk without ever leaving a half-written file where a good one was:
// every file goes to a temporary name beside its path (same folder, so the rename is atomic) and is
// renamed into place only once all of them are written. Shared by the command line and the studio.
import { copyFileSync, lstatSync, renameSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { exportCsv } from './export-csv.js';
import { exportParquet, PARQUET_TABLES, parquetTablePath } from './export-parquet.js';
import { exportPerfetto } from './export-perfetto.js';
import { Refusal, type TraceContents } from '../../engine/index.js';
import type { TraceExportFormat } from '../../shared/messages.js';

/** What the file system answers when a destination cannot take the export. */
const UNWRITABLE = new Set(['EISDIR', 'EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EDQUOT', 'ENAMETOOLONG']);

/** Most bytes one name in a folder may have on the file systems the studio runs on (NAME_MAX). */
export const MAX_FILE_NAME_BYTES = 255;
/** Most bytes a whole path may have (PATH_MAX on Linux). */
export const MAX_PATH_BYTES = 4096;

/** A fresh name beside `file` (same folder, so a rename is atomic), hidden and unlikely to clash. */
export function temporaryPathBeside(file: string): string {
  const suffix = `${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  // The temporary name adds its marks to the file's own: keep it a name the folder can hold.
  let base = path.basename(file);
  const room = MAX_FILE_NAME_BYTES - Buffer.byteLength(`..${suffix}.tmp`);
  while (Buffer.byteLength(base) > room) base = base.slice(0, -1);
  return path.join(path.dirname(file), `.${base}.${suffix}.tmp`);
}

/**
 * Refuses, in one line, a path no file system takes as a file's name: one holding a NUL byte or
 * a name (or path) longer than the file system allows. Without this check the write fails deep in
 * Node with a stack trace instead of an answer.
 */
export function checkWritableName(file: string): void {
  if (file.includes('\0')) throw new Refusal(`cannot write ${file.replace(/\0/g, '\\0')}: a file name may not hold a NUL byte`);
  const name = path.basename(file);
  const nameBytes = Buffer.byteLength(name);
  if (nameBytes > MAX_FILE_NAME_BYTES) {
    throw new Refusal(`cannot write ${name.slice(0, 24)}…: its name is ${nameBytes} bytes long, and a file name may have at most ${MAX_FILE_NAME_BYTES}`);
  }
  const pathBytes = Buffer.byteLength(path.resolve(file));
  if (pathBytes > MAX_PATH_BYTES) throw new Refusal(`cannot write ${name}: its path is ${pathBytes} bytes long, and a path may have at most ${MAX_PATH_BYTES}`);
}

export function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** Whether something (a file, a folder, a link, even a dangling one) has this name. */
export function pathTaken(file: string): boolean {
  try {
    lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

function isFolder(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/** The files an export writes: one, or for Parquet one per table (OUT.steps.parquet, …). */
export function traceExportPaths(format: TraceExportFormat, out: string): string[] {
  return format === 'parquet' ? PARQUET_TABLES.map((table) => parquetTablePath(out, table)) : [out];
}

/**
 * Exports a trace: each file is written beside its path and renamed into place only once every
 * file is written, so a failed export leaves what was there. JSON Lines copies `sourcePath` (the
 * trace file itself), so it needs no `trace` read into memory. Returns the paths written.
 */
export async function writeTraceExport(trace: TraceContents | null, format: TraceExportFormat, out: string, sourcePath?: string): Promise<string[]> {
  const finals = traceExportPaths(format, out);
  finals.forEach(checkWritableName);
  const folder = path.dirname(out);
  if (!isFolder(folder)) throw new Refusal(`cannot write ${out}: there is no folder ${folder}`);
  const base = temporaryPathBeside(out);
  const temporaries = format === 'parquet' ? PARQUET_TABLES.map((table) => parquetTablePath(base, table)) : [base];
  try {
    if (format !== 'jsonl' && trace === null) throw new Error(`a ${format} export needs the trace's steps`);
    if (format === 'parquet') exportParquet(trace!, base);
    if (format === 'perfetto') exportPerfetto(trace!, base);
    if (format === 'csv') exportCsv(trace!, base);
    if (format === 'jsonl') {
      if (sourcePath === undefined) throw new Error('a JSON Lines export copies the trace file: name it');
      copyFileSync(sourcePath, base);
    }
    temporaries.forEach((temporary, i) => renameSync(temporary, finals[i]));
  } catch (err) {
    temporaries.forEach(removeQuietly);
    const code = (err as NodeJS.ErrnoException).code;
    // A destination that is a folder, read-only or full is its fault, not the exporter's.
    if (code !== undefined && UNWRITABLE.has(code)) throw new Refusal(`cannot write ${out}: ${code}`);
    throw err;
  }
  return finals;
}
