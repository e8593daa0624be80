// Large inputs: prompt files read as streams and only as far as needed, no stack-sized spreads,
// and a prompt judged against the context before it is tokenised in full (what `run` does with
// the prompts that cannot fit: test/cli/commands/run-prompts.test.ts).
import { createWriteStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodePromptWithin, fitPrompts, PREFIX_CHARS_PER_TOKEN, readPromptsFile, takeRequests, type PromptRecord } from '../../src/engine/run/workload.js';
import { ModelTokenizer } from '../../src/engine/model/tokenizer.js';
import { tinyPairFolders } from './model/tiny-pair-folders.js';

const tmp = tinyPairFolders('echo-large-');
const { targetDir } = tmp;

async function writeLines(file: string, count: number, line: (i: number) => string): Promise<void> {
  const out = createWriteStream(file);
  for (let i = 0; i < count; i++) if (!out.write(`${line(i)}\n`)) await new Promise<void>((r) => out.once('drain', () => r()));
  await new Promise<void>((r) => out.end(() => r()));
}

describe('prompt files of any size', () => {
  it('takes requests from hundreds of thousands of records without overflowing the stack', () => {
    const records: PromptRecord[] = Array.from({ length: 300_000 }, (_, i) => ({ id: `p${i}`, prompt: 'x', arrivalMs: i }));
    const taken = takeRequests(records, 300_002);
    expect(taken.at(-1)).toEqual({ id: 'p1#2', prompt: 'x', arrivalMs: 1 + 299_999 });
  });

  it('reads only the records asked for: lines after them are not looked at', async () => {
    const file = join(tmp.path, 'big.jsonl');
    await writeLines(file, 200_000, (i) => (i === 150_000 ? 'not json at all' : JSON.stringify({ id: `p${i}`, prompt: `line ${i}` })));
    const two = await readPromptsFile(file, { limit: 2 });
    expect(two.map((r) => r.id)).toEqual(['p0', 'p1']);
    await expect(readPromptsFile(file)).rejects.toThrow(/big\.jsonl line 150001: not valid JSON$/);
  });

  it('never quotes a bad line in its error (the file may be anything)', async () => {
    const file = join(tmp.path, 'secret.txt');
    writeFileSync(file, '{root:x:0:0:root:/root:/bin/bash\n');
    const err = await readPromptsFile(file).catch((e: Error) => e);
    expect(String(err)).toMatch(/secret\.txt line 1: not valid JSON/);
    expect(String(err)).not.toContain('root');
  });
});

describe('a prompt against the context', () => {
  it('refuses a huge prompt on a bounded prefix, never tokenising all of it', () => {
    const tokenizer = ModelTokenizer.load(targetDir);
    const lengths: number[] = [];
    const counting = {
      encode: (text: string, options?: { addSpecialTokens?: boolean }) => {
        lengths.push(text.length);
        return tokenizer.encode(text, options);
      },
      applyChatTemplate: tokenizer.applyChatTemplate.bind(tokenizer),
    };
    const huge = { id: 'huge', prompt: 'the cat sat on the mat. '.repeat(200_000) }; // 4.8 M characters
    expect(encodePromptWithin(huge, counting, 400)).toBeNull();
    expect(Math.max(...lengths)).toBeLessThanOrEqual(401 * PREFIX_CHARS_PER_TOKEN);
    const small = { id: 'small', prompt: 'the cat sat' };
    expect(encodePromptWithin(small, counting, 400)).toEqual(tokenizer.encode('the cat sat'));
  });

  it('leaves out, by id, the prompts that cannot fit and the empty ones', () => {
    const tokenizer = ModelTokenizer.load(targetDir);
    const fitted = fitPrompts(
      [
        { id: 'ok', prompt: 'the cat' },
        { id: 'long', prompt: 'the cat sat on the mat. '.repeat(100) },
        { id: 'empty', prompt: '' },
      ],
      tokenizer,
      50,
    );
    expect(fitted.items.map((i) => i.record.id)).toEqual(['ok']);
    expect(fitted.tooLong).toEqual(['long']);
    expect(fitted.empty).toEqual(['empty']);
  });
});
