// `echo-studio run` on prompts that do not all fit the tiny pair's 512 positions: a prompt that
// cannot fit is skipped with a note instead of failing the run, a short file repeated to make up
// the requests is said to be, and ar is not held to a draft tree it never builds.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { register as registerRun } from '../../../src/cli/commands/run.js';
import { runCli } from '../helpers.js';
import { tinyPairFolders } from '../../engine/model/tiny-pair-folders.js';

const tmp = tinyPairFolders('echo-run-prompts-');
const { targetDir, draftDir } = tmp;

describe('echo-studio run on prompts against the context', () => {
  it('skips a prompt that cannot fit with a note naming it, and fails only when none can run', async () => {
    const prompts = join(tmp.path, 'mixed.jsonl');
    writeFileSync(prompts, [{ id: 'a', prompt: 'def add(x, y):' }, { id: 'too-long', prompt: 'the cat sat on the mat. '.repeat(200) }, { id: 'b', prompt: 'x = 1' }].map((r) => JSON.stringify(r)).join('\n'));
    const args = ['run', '--policy', 'eagle2', '--prompts', prompts, '--max-new-tokens', '4', '--draft', draftDir, '--target', targetDir, '--json'];
    const { stdout, stderr } = await runCli(registerRun, [...args, '--requests', '2']);
    expect(stderr).toMatch(/note: skipped 1 prompt longer than \d+ tokens \(the target holds 512 positions.*\): "too-long"/);
    expect(JSON.parse(stdout).requests).toBe(2);
    const onlyLong = join(tmp.path, 'only-long.jsonl');
    writeFileSync(onlyLong, JSON.stringify({ id: 'too-long', prompt: 'the cat sat on the mat. '.repeat(200) }));
    await expect(runCli(registerRun, ['run', '--policy', 'eagle2', '--prompts', onlyLong, '--draft', draftDir, '--target', targetDir])).rejects.toThrow(
      /none of the 1 prompts read from .*only-long\.jsonl can run: each is empty or longer than \d+ tokens/,
    );
  });

  it('says so when a short file is repeated to make up the requests', async () => {
    const one = join(tmp.path, 'one.jsonl');
    writeFileSync(one, JSON.stringify({ id: 'only', prompt: 'x = 1' }));
    const { stderr } = await runCli(registerRun, ['run', '--policy', 'chain', '--prompts', one, '--requests', '3', '--max-new-tokens', '2', '--draft', draftDir, '--target', targetDir, '--json']);
    expect(stderr).toMatch(/note: .*one\.jsonl holds 1 prompt; the 3 requests repeat it \(ids only#2, …\); pass --requests 1 to run each once/);
  });

  it('ar is not held to a draft tree it never builds', async () => {
    // 512 positions: 460 new tokens and a short prompt leave no room for a 64-deep tree, but ar drafts none.
    const one = join(tmp.path, 'short.jsonl');
    writeFileSync(one, JSON.stringify({ id: 'p', prompt: 'x' }));
    const args = ['--prompts', one, '--requests', '1', '--max-new-tokens', '460', '--draft', draftDir, '--target', targetDir, '--json'];
    const { stdout } = await runCli(registerRun, ['run', '--policy', 'ar', ...args]);
    expect(JSON.parse(stdout).requests).toBe(1);
    await expect(runCli(registerRun, ['run', '--policy', 'chain', ...args])).rejects.toThrow(/a draft tree up to 64 deep/);
  }, 60_000);
});
