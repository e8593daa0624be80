// Which files a client of the engine host may read and write. The desktop app's paths come from
// native dialogs the user answered, so it may use any. A browser client of `echo-studio serve` only
// types paths, and anyone holding the token can send them, so it gets the folders the user chose
// when starting the server: the studio's data folder, the models folder and the folders named with
// --allow (and a replayed trace's folder). A path is judged by its real location (links resolved),
// and a path that is missing gets the same answer as one outside, so the answer never tells
// whether something exists outside those folders.
import { lstatSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { Refusal } from '../engine/index.js';

export interface FileAccess {
  /** True when every path may be used (the desktop app). */
  readonly unrestricted: boolean;
  /** The real path of an existing file or folder the client may read; throws PathNotAvailable otherwise. */
  readable(file: string): string;
  /**
   * Where a client may write `file`: its folder's real path and its name. Throws PathNotAvailable
   * when the folder is missing or outside, or when `file` names a folder.
   */
  writable(file: string): string;
}

/** A path a client may not use, or that is not there: one message for both. */
export class PathNotAvailable extends Refusal {
  constructor(
    readonly path: string,
    purpose: 'read' | 'write',
  ) {
    super(
      purpose === 'read'
        ? `${path}: no such file or folder in the folders this studio may read`
        : `${path}: cannot write there: not a folder this studio may write in`,
    );
    this.name = 'PathNotAvailable';
  }
}

/** The desktop app's access: any path (each one came from a dialog the user answered). */
export const ANY_PATH: FileAccess = {
  unrestricted: true,
  readable: (file) => path.resolve(file),
  writable: (file) => path.resolve(file),
};

function isInside(folder: string, file: string): boolean {
  const relative = path.relative(folder, file);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

function realPathOrNull(file: string): string | null {
  try {
    return realpathSync(file);
  } catch {
    return null;
  }
}

export interface AllowedFolderOptions {
  /** Where writes may go (default: every folder that may be read). */
  writable?: readonly string[];
  /**
   * Folders nothing is ever written into, even under a writable one: the app's own files and the
   * models folder. A data folder that holds the app (a checkout) still never changes the app.
   */
  protect?: readonly string[];
}

/**
 * Access limited to `folders` (and everything under them). Relative paths are taken from `base`,
 * the studio's data folder. Folders that do not exist are left out.
 */
export function allowedFolders(folders: readonly string[], base: string, options: AllowedFolderOptions = {}): FileAccess {
  const realRoots = (list: readonly string[]) => [...new Set(list.map((folder) => realPathOrNull(path.resolve(base, folder))).filter((r): r is string => r !== null))];
  const roots = realRoots(folders);
  const writeRoots = options.writable ? realRoots(options.writable) : roots;
  const protectedRoots = realRoots(options.protect ?? []);
  const allowed = (real: string) => roots.some((root) => isInside(root, real));
  const writableFolder = (real: string) => writeRoots.some((root) => isInside(root, real)) && !protectedRoots.some((root) => isInside(root, real));
  return {
    unrestricted: false,
    readable(file) {
      const real = realPathOrNull(path.resolve(base, file));
      if (real === null || !allowed(real)) throw new PathNotAvailable(file, 'read');
      return real;
    },
    writable(file) {
      const absolute = path.resolve(base, file);
      const name = path.basename(absolute);
      const folder = realPathOrNull(path.dirname(absolute));
      if (folder === null || !writableFolder(folder) || name === '' || name === '.' || name === '..') throw new PathNotAvailable(file, 'write');
      try {
        if (!statSync(folder).isDirectory()) throw new PathNotAvailable(file, 'write');
      } catch {
        throw new PathNotAvailable(file, 'write');
      }
      const target = path.join(folder, name);
      let existing;
      try {
        existing = lstatSync(target);
      } catch {
        return target; // nothing there yet
      }
      if (existing.isDirectory()) throw new Refusal(`${file} is a folder; name a file to write`);
      return target;
    },
  };
}
