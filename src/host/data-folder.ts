// Where the studio keeps what it makes (reports of the quick study, exports a browser asks for):
// a folder of its own per user, by each platform's convention, never the folder the server was
// started in (a checkout, with the app's code and bundled models inside). The desktop app uses
// Electron's userData folder instead; `serve --data-dir DIR` names another.
import { mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { Refusal } from '../engine/index.js';

/** The folder's name under the platform's per-user data folder. */
export const DATA_FOLDER_NAME = 'echo-studio';

/**
 * The per-user data folder: $XDG_DATA_HOME/echo-studio (else ~/.local/share/echo-studio) on Linux
 * and other Unix systems, ~/Library/Application Support/echo-studio on macOS, %APPDATA%\echo-studio
 * on Windows.
 */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform, home: string = homedir()): string {
  const join = platform === 'win32' ? path.win32.join : path.posix.join;
  if (platform === 'win32') return join(env.APPDATA || join(home, 'AppData', 'Roaming'), DATA_FOLDER_NAME);
  if (platform === 'darwin') return join(home, 'Library', 'Application Support', DATA_FOLDER_NAME);
  // The XDG spec: a relative value is invalid and is ignored.
  const xdg = env.XDG_DATA_HOME;
  return join(xdg && path.posix.isAbsolute(xdg) ? xdg : join(home, '.local', 'share'), DATA_FOLDER_NAME);
}

function isInside(folder: string, file: string): boolean {
  const relative = path.relative(folder, file);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/**
 * The data folder to use: `named` (serve --data-dir) must exist; the default one is made when
 * missing. Either way it may not lie inside a protected folder (the app's own files, the models
 * folder): the studio writes there, and they are not its to change.
 */
export function resolveDataDir(named: string | undefined, protectedFolders: Record<string, string>): string {
  const dir = path.resolve(named ?? defaultDataDir());
  for (const [what, folder] of Object.entries(protectedFolders)) {
    if (isInside(path.resolve(folder), dir)) {
      throw new Refusal(`the data folder ${dir} is inside ${what} (${folder}); the studio writes there, so name a folder of your own with --data-dir`);
    }
  }
  if (named === undefined) mkdirSync(dir, { recursive: true });
  return dir;
}
