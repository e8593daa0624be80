// The studio's data folder: the platform's per-user convention unless named, made when missing,
// and never inside the app's own files or the models folder.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultDataDir, resolveDataDir } from '../../src/host/data-folder.js';
import { tempDir } from '../engine/model/helpers.js';

const tmp = tempDir('echo-data-folder-');
afterAll(() => tmp.cleanup());

describe('the data folder', () => {
  it('follows each platform: XDG_DATA_HOME or ~/.local/share on Linux, Application Support on macOS, %APPDATA% on Windows', () => {
    expect(defaultDataDir({}, 'linux', '/home/ada')).toBe('/home/ada/.local/share/echo-studio');
    expect(defaultDataDir({ XDG_DATA_HOME: '/data/ada' }, 'linux', '/home/ada')).toBe('/data/ada/echo-studio');
    // The XDG spec: a relative XDG_DATA_HOME is invalid and ignored.
    expect(defaultDataDir({ XDG_DATA_HOME: 'share' }, 'linux', '/home/ada')).toBe('/home/ada/.local/share/echo-studio');
    expect(defaultDataDir({}, 'darwin', '/Users/ada')).toBe('/Users/ada/Library/Application Support/echo-studio');
    expect(defaultDataDir({ APPDATA: 'C:\\Users\\ada\\AppData\\Roaming' }, 'win32', 'C:\\Users\\ada')).toBe('C:\\Users\\ada\\AppData\\Roaming\\echo-studio');
  });

  it('refuses a folder inside the app or the models folder in one line, and makes the default one when missing', () => {
    const app = path.join(tmp.path, 'app');
    const models = path.join(app, 'assets', 'models');
    mkdirSync(models, { recursive: true });
    const protectedFolders = { "the app's own folder": app, 'the models folder': models };
    expect(() => resolveDataDir(app, protectedFolders)).toThrow(/^the data folder .*app is inside the app's own folder \(.*\); the studio writes there, so name a folder of your own with --data-dir$/);
    expect(() => resolveDataDir(path.join(models, 'mine'), protectedFolders)).toThrow(/is inside the app's own folder/);
    const own = path.join(tmp.path, 'own');
    mkdirSync(own);
    expect(resolveDataDir(own, protectedFolders)).toBe(own);

    const saved = process.env.XDG_DATA_HOME;
    process.env.XDG_DATA_HOME = path.join(tmp.path, 'xdg');
    try {
      const made = resolveDataDir(undefined, protectedFolders);
      expect(made).toBe(path.join(tmp.path, 'xdg', 'echo-studio'));
      expect(existsSync(made)).toBe(true);
    } finally {
      if (saved === undefined) delete process.env.XDG_DATA_HOME;
      else process.env.XDG_DATA_HOME = saved;
    }
  });
});
