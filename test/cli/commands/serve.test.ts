// `echo-studio serve` as a user starts it: its data folder is the per-user one (never the folder it
// was started in), a data folder inside the app is refused in one line, and it prints the
// controlling URL and an observer link with a token of its own.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../../engine/model/helpers.js';
import { missingBuild, repoRoot } from '../../host/helpers.js';

const skipReason = missingBuild();
if (skipReason) console.warn(`skipping the serve command tests: ${skipReason}`);
const tmp = tempDir('echo-serve-');
afterAll(() => tmp.cleanup());

/** Starts serve in the checkout; resolves with what it printed once it serves (then stops it) or exits. */
function serve(args: string[], env: NodeJS.ProcessEnv): Promise<{ out: string; err: string; code: number | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'bin', 'echo-studio.js'), 'serve', '--port', '0', ...args], { cwd: repoRoot, env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (/Observer link.*\n/.test(out)) child.kill('SIGTERM');
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) => resolve({ out, err, code }));
  });
}

describe.skipIf(skipReason !== null)('echo-studio serve', () => {
  it('keeps its files in the per-user data folder, not the checkout it was started in, and prints an observer link', async () => {
    const xdg = path.join(tmp.path, 'xdg');
    const { out } = await serve([], { XDG_DATA_HOME: xdg });
    const dataDir = path.join(xdg, 'echo-studio');
    expect(out).toContain(`The studio's data folder (reports, exports): ${dataDir}\n`);
    expect(existsSync(dataDir)).toBe(true);
    expect(out).toMatch(new RegExp(`and write only in: ${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`));
    const control = /serving at (\S+)/.exec(out)![1];
    const observer = /Observer link \(sees everything, can change nothing\): (\S+)/.exec(out)![1];
    expect(new URL(observer).searchParams.get('token')).not.toBe(new URL(control).searchParams.get('token'));
  }, 60_000);

  it("refuses a data folder inside the app's own folder in one line", async () => {
    const { err, code } = await serve(['--data-dir', '.'], {});
    expect(code).toBe(1);
    expect(err).toBe(`echo-studio: the data folder ${repoRoot} is inside the app's own folder (${repoRoot}); the studio writes there, so name a folder of your own with --data-dir\n`);
  }, 60_000);
});
