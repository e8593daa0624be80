// The files a command writes. Every output path is checked before any work starts: its folder
// exists and is writable, it is not a folder, no two outputs and no output and input are the same
// file (compared by real path, so links and `./` spellings do not slip past), and an existing file
// is replaced only with --force. Writing never leaves a half-written file where a good one was:
// a whole file goes to a temporary name beside it and is renamed over it; a streamed file (a
// run's --out and --trace) is written in place when nothing was there, so a killed run keeps what
// it finished, and to a temporary name renamed at the end when it replaces a file.
import { accessSync, closeSync, constants, existsSync, openSync, realpathSync, renameSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { removeQuietly, temporaryPathBeside } from '../output/index.js';

export { temporaryPathBeside, traceExportPaths, writeTraceExport } from '../output/index.js';

/** A path a command reads or writes, and the flag (or argument) that named it, for messages. */
export interface NamedPath {
  flag: string;
  path: string;
}

/** The path with every existing part resolved through links: one spelling per file. */
function realPath(file: string): string {
  const absolute = path.resolve(file);
  try {
    return realpathSync(absolute);
  } catch {
    // Not there (yet): resolve its folder, keep its name.
    try {
      return path.join(realpathSync(path.dirname(absolute)), path.basename(absolute));
    } catch {
      return absolute;
    }
  }
}

/**
 * Refuses, in one line naming the flag, an output that cannot be written or would destroy
 * something: a missing or read-only folder, a folder in its place, an existing file without
 * --force, an input, or another output.
 */
export function checkOutputPaths(outputs: readonly NamedPath[], options: { inputs?: readonly (NamedPath | undefined)[]; force?: boolean } = {}): void {
  const seen = new Map<string, NamedPath>();
  for (const input of options.inputs ?? []) if (input) seen.set(realPath(input.path), input);
  const inputs = new Set(seen.keys());
  for (const output of outputs) {
    const folder = path.dirname(path.resolve(output.path));
    if (!existsSync(folder) || !statSync(folder).isDirectory()) throw new Error(`${output.flag}: the folder ${path.dirname(output.path)} does not exist`);
    try {
      accessSync(folder, constants.W_OK);
    } catch {
      throw new Error(`${output.flag}: cannot write in the folder ${path.dirname(output.path)}`);
    }
    const real = realPath(output.path);
    const other = seen.get(real);
    if (other) {
      const what = inputs.has(real) ? 'an output never replaces an input' : 'each output needs its own file';
      throw new Error(`${output.flag} and ${other.flag} name the same file (${output.path}); ${what}`);
    }
    seen.set(real, output);
    if (existsSync(output.path)) {
      if (statSync(output.path).isDirectory()) throw new Error(`${output.flag}: ${output.path} is a folder`);
      if (!options.force) throw new Error(`${output.flag}: ${output.path} exists; pass --force to replace it`);
    }
  }
}

/**
 * Writes `file` whole and at once: `write` fills a temporary file beside it, which then replaces
 * `file` by a rename; if `write` fails the temporary file is removed and `file` is untouched.
 */
export async function writeAtomically<T>(file: string, write: (temporaryPath: string) => T | Promise<T>): Promise<T> {
  const temporary = temporaryPathBeside(file);
  try {
    const result = await write(temporary);
    renameSync(temporary, file);
    return result;
  } catch (err) {
    removeQuietly(temporary);
    throw err;
  }
}

/** Where a streamed output is written while it grows, and how it lands on its path. */
export interface StreamedOutput {
  readonly path: string;
  /** The path itself when nothing was there; else a temporary name beside it. */
  readonly writePath: string;
  /** Puts what was written in place (renames the temporary file over the old one). */
  commit(): void;
}

/** A streamed output for `file`: in place when new (a killed run keeps its lines), else beside it until commit. */
export function streamedOutput(file: string): StreamedOutput {
  const replaces = existsSync(file);
  const writePath = replaces ? temporaryPathBeside(file) : file;
  let committed = false;
  return {
    path: file,
    writePath,
    commit() {
      if (committed) return;
      committed = true;
      if (writePath !== file && existsSync(writePath)) renameSync(writePath, file);
    },
  };
}

/** A JSON Lines file written one line at a time, each straight to the file descriptor. */
export class JsonLinesOutput {
  private fd: number | null;
  private readonly output: StreamedOutput;

  constructor(file: string) {
    this.output = streamedOutput(file);
    this.fd = openSync(this.output.writePath, 'w');
  }

  write(record: unknown): void {
    if (this.fd === null) throw new Error(`${this.output.path} is already closed`);
    writeSync(this.fd, `${JSON.stringify(record)}\n`);
  }

  /** Closes the file and puts it in place; `reorder` rewrites it first (whole, then renamed). */
  async close(rewrite?: (temporaryPath: string) => void): Promise<void> {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    if (rewrite) await writeAtomically(this.output.writePath, rewrite);
    this.output.commit();
  }
}

export const EXPORT_FORMATS = ['parquet', 'perfetto', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
