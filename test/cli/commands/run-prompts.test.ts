// `echo-studio run` on prompts that do not all fit the tiny pair's 512 positions: a prompt that
// cannot fit is skipped with a note instead of failing the run, a short file repeated to make up
// the requests is said to be, and every policy runs the same prompts (ar too is held to the draft
// tree it never builds, so that separate runs of two policies compare like with like).
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

  it('every policy refuses the same prompts: ar is held to the draft tree as the drafting policies are', async () => {
    // 512 positions: 460 new tokens and a short prompt leave no room for a 64-deep tree. ar drafts
    // none, but a prompt it ran while echo skipped it made two runs of one file different workloads.
    const one = join(tmp.path, 'short.jsonl');
    writeFileSync(one, JSON.stringify({ id: 'p', prompt: 'x' }));
    const args = ['--prompts', one, '--requests', '1', '--max-new-tokens', '460', '--draft', draftDir, '--target', targetDir, '--json'];
    for (const policy of ['ar', 'chain']) {
      await expect(runCli(registerRun, ['run', '--policy', policy, ...args])).rejects.toThrow(/a draft tree up to 64 deep, reserved for every policy alike/);
    }
  }, 60_000);

  it('--max-new-tokens past the context is one line, not a note about prompts longer than a negative count', async () => {
    const args = ['run', '--policy', 'ar', '--requests', '1', '--max-new-tokens', '65536', '--draft', draftDir, '--target', targetDir];
    await expect(runCli(registerRun, args)).rejects.toThrow(/^--max-new-tokens 65536 leaves no room for a prompt: the target holds 512 positions/);
  });
});
