// `model check` on a text longer than the model's context: it checks the tokens that fit and says
// so, never positions past the context.
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { register } from '../../../src/cli/commands/model.js';
import { runCli } from '../helpers.js';
import { tinyPairFolders } from '../../engine/model/tiny-pair-folders.js';

const folders = tinyPairFolders('echo-check-context-');
const POSITIONS = 8;
let shortModel: string;

beforeAll(() => {
  // The tiny target, told it holds only POSITIONS positions.
  shortModel = join(folders.path, 'short-context');
  cpSync(folders.targetDir, shortModel, { recursive: true });
  const file = join(shortModel, 'config.json');
  writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), max_position_embeddings: POSITIONS }));
});

const TEXT = 'the cat and the hat sat on the mat with a bat';

describe('model check and the context', () => {
  it('checks only the positions the model holds, and says so in one line', async () => {
    const full = JSON.parse((await runCli(register, ['model', 'check', folders.targetDir, '--text', TEXT, '--json'])).stdout);
    expect(full.tokens.length).toBeGreaterThan(POSITIONS);
    expect(full.note).toBeUndefined();

    const { stdout, stderr } = await runCli(register, ['model', 'check', shortModel, '--text', TEXT, '--json']);
    const cut = JSON.parse(stdout);
    expect(cut.tokens).toEqual(full.tokens.slice(0, POSITIONS));
    expect(cut.positions).toHaveLength(POSITIONS);
    const note = `the text is ${full.tokens.length} tokens, past the model's context of ${POSITIONS} positions: checked its first ${POSITIONS} tokens only`;
    expect(cut.note).toBe(note);
    expect(stderr).toBe(`note: ${note}\n`);
    // The same weights, so the positions that fit predict as the full model's do.
    expect(cut.positions.map((p: { top: { id: number }[] }) => p.top[0].id)).toEqual(full.positions.slice(0, POSITIONS).map((p: { top: { id: number }[] }) => p.top[0].id));
  });
});
