import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allowedFolders, ANY_PATH, PathNotAvailable } from '../../src/host/allowed-folders.js';
import { tempDir } from '../engine/model/helpers.js';

const tmp = tempDir('echo-allowed-');
afterAll(() => tmp.cleanup());

// data/ and models/ are chosen; outside/ is not.
const data = path.join(tmp.path, 'data');
const models = path.join(tmp.path, 'models');
const outside = path.join(tmp.path, 'outside');
for (const dir of [data, models, outside, path.join(data, 'sub')]) mkdirSync(dir, { recursive: true });
writeFileSync(path.join(data, 'prompts.txt'), 'hello\n');
writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
symlinkSync(path.join(outside, 'secret.txt'), path.join(data, 'link-to-secret.txt'));
symlinkSync(outside, path.join(data, 'link-to-outside'));
symlinkSync(path.join(data, 'prompts.txt'), path.join(outside, 'link-into-data.txt'));

const access = allowedFolders([data, models, path.join(tmp.path, 'not-there')], data);

/** The message with the path taken out: what a client learns beyond its own input. */
function refusal(use: () => unknown, file: string): string {
  try {
    use();
  } catch (err) {
    expect(err).toBeInstanceOf(PathNotAvailable);
    return (err as Error).message.replace(file, '<path>');
  }
  throw new Error(`${file} was allowed`);
}

describe('allowed folders', () => {
  it('reads inside the chosen folders, by real path, relative paths from the data folder', () => {
    expect(access.readable(path.join(data, 'prompts.txt'))).toBe(path.join(data, 'prompts.txt'));
    expect(access.readable('prompts.txt')).toBe(path.join(data, 'prompts.txt'));
    expect(access.readable(models)).toBe(models);
    expect(access.readable(path.join(outside, 'link-into-data.txt'))).toBe(path.join(data, 'prompts.txt'));
  });

  it('refuses outside paths, traversal and links leading out, with the message it gives a missing path', () => {
    const missing = refusal(() => access.readable(path.join(data, 'nope.txt')), path.join(data, 'nope.txt'));
    for (const file of [
      path.join(outside, 'secret.txt'),
      path.join(outside, 'nope.txt'),
      path.join(data, '..', 'outside', 'secret.txt'),
      '../outside/secret.txt',
      path.join(data, 'link-to-secret.txt'),
      path.join(data, 'link-to-outside', 'secret.txt'),
      '/etc/passwd',
      `${data}\0`,
    ]) {
      expect(refusal(() => access.readable(file), file)).toBe(missing);
    }
  });

  it('writes only into chosen folders that exist, never into a name that is a folder', () => {
    expect(access.writable(path.join(data, 'sub', 'out.csv'))).toBe(path.join(data, 'sub', 'out.csv'));
    expect(access.writable('out.csv')).toBe(path.join(data, 'out.csv'));
    const missingFolder = refusal(() => access.writable(path.join(data, 'nope', 'out.csv')), path.join(data, 'nope', 'out.csv'));
    for (const file of [path.join(outside, 'out.csv'), path.join(data, 'link-to-outside', 'out.csv'), path.join(tmp.path, 'out.csv'), '/etc/out.csv', '/no/such/dir/out.csv']) {
      expect(refusal(() => access.writable(file), file)).toBe(missingFolder);
    }
    expect(() => access.writable(path.join(data, 'sub'))).toThrow(/is a folder/);
  });

  it('reads but never writes in a protected folder, even under a writable one (the app, the models)', () => {
    // The data folder holds the app (a checkout); the app holds its models.
    const app = path.join(data, 'app');
    const appModels = path.join(app, 'assets', 'models');
    mkdirSync(appModels, { recursive: true });
    writeFileSync(path.join(appModels, 'config.json'), '{}');
    const guarded = allowedFolders([data, models, appModels], data, { writable: [data], protect: [app, models] });
    expect(guarded.readable(path.join(appModels, 'config.json'))).toBe(path.join(appModels, 'config.json'));
    expect(guarded.readable(models)).toBe(models);
    expect(guarded.writable(path.join(data, 'out.csv'))).toBe(path.join(data, 'out.csv'));
    const missingFolder = refusal(() => guarded.writable(path.join(data, 'nope', 'out.csv')), path.join(data, 'nope', 'out.csv'));
    for (const file of [path.join(appModels, 'config.json'), path.join(app, 'out.csv'), path.join(models, 'out.csv'), 'app/assets/models/out.csv']) {
      expect(refusal(() => guarded.writable(file), file)).toBe(missingFolder);
    }
  });

  it('the desktop app uses any path', () => {
    expect(ANY_PATH.unrestricted).toBe(true);
    expect(ANY_PATH.readable('/etc/passwd')).toBe('/etc/passwd');
  });
});
