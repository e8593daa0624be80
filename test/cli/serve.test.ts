// The installed CLI, as a user runs it: bin/echo-studio.js → dist/cli/main.js.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingBuild, repoRoot, writeModelsFolder } from '../host/helpers.js';

const bin = path.join(repoRoot, 'bin', 'echo-studio.js');
const skipReason = missingBuild();
if (skipReason) console.warn(`skipping CLI tests: ${skipReason}`);

function run(args: string[]) {
  return spawnSync(process.execPath, [bin, ...args], { cwd: repoRoot, encoding: 'utf8', timeout: 60_000 });
}

describe.skipIf(skipReason !== null)('echo-studio CLI', () => {
  it('lists serve in --help and documents its flags', () => {
    const top = run(['--help']);
    expect(top.status).toBe(0);
    expect(top.stdout).toMatch(/serve \[options\]/);
    const serve = run(['serve', '--help']);
    expect(serve.status).toBe(0);
    for (const flag of ['--port', '--host', '--models-dir', '--data-dir', '--allow']) expect(serve.stdout).toContain(flag);
  });

  it('refuses, in one line, a folder to allow that does not exist', () => {
    const missing = path.join(tmpdir(), 'echo-no-such-folder-to-allow');
    const bad = run(['serve', '--port', '0', '--allow', missing]);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr.trim()).toContain(`--allow ${missing}: no such folder`);
  });

  it('refuses a bad port with one line', () => {
    const bad = run(['serve', '--port', 'eighty']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("option '-p, --port <n>' argument 'eighty' is invalid");
  });

  it('serve prints a loopback URL with a token, answers it, and stops cleanly on SIGTERM', async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), 'echo-cli-'));
    await writeModelsFolder(path.join(scratch, 'models'));
    const env = { ...process.env, XDG_DATA_HOME: path.join(scratch, 'data-home') };
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--models-dir', path.join(scratch, 'models')], { cwd: repoRoot, env });
    try {
      let stdout = '';
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          const found = /serving at (http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]+)/.exec(stdout);
          if (found) resolve(found[1]);
        });
        child.once('exit', (code) => reject(new Error(`serve exited early with ${code}: ${stdout}`)));
      });
      // It says where the browser may read and write: the per-user data folder (never the checkout it
      // was started in) and the models folder.
      expect(stdout).toContain(`only in: ${path.join(scratch, 'data-home', 'echo-studio')}, ${path.join(scratch, 'models')}`);
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="root">');
      const refused = await fetch(url.replace(/\?token=.*/, ''));
      expect(refused.status).toBe(403);
      const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exit).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
