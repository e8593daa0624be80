import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ModelTokenizer } from '../../src/engine/model/tokenizer.js';
import { encodePrompt, parsePrompts, promptText, readPromptsFile, takeRequests } from '../../src/engine/run/workload.js';
import { writeFixtureModel } from './model/fixtures.js';
import { tempDir } from './model/helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

describe('prompts JSONL', () => {
  it('reads id, prompt, optional domain and arrival, skipping blank lines', () => {
    const records = parsePrompts('{"id":"a","prompt":"x"}\n\n{"id":"b","domain":"code","prompt":"y","arrivalMs":20}\n', 'p.jsonl');
    expect(records).toEqual([
      { id: 'a', prompt: 'x' },
      { id: 'b', domain: 'code', prompt: 'y', arrivalMs: 20 },
    ]);
  });

  it.each([
    ['{"id":"a","prompt":"x"}\n{"id":"b"', 'p.jsonl line 2: not valid JSON'],
    ['{"id":"a","prompt":"x"}\n[1,2]', 'p.jsonl line 2: the line: '],
    ['{"id":"a","prompt":3}', 'p.jsonl line 1: field "prompt": '],
    ['{"prompt":"x"}', 'p.jsonl line 1: field "id": '],
    ['{"id":"a","prompt":"x","arrivalMs":-5}', 'p.jsonl line 1: field "arrivalMs": '],
    ['{"id":"a","prompt":"x"}\n\n{"id":"a","prompt":"y"}', 'p.jsonl line 3: id "a" already used on line 1'],
    ['\n\n', 'p.jsonl: no prompts in the file'],
    ['{"id":"a"}', 'p.jsonl line 1: field "prompt": give either "prompt" (plain text) or "messages" (a conversation), not both or neither'],
    ['{"id":"a","prompt":"x","messages":[{"role":"user","content":"y"}]}', 'not both or neither'],
    ['{"id":"a","messages":[]}', 'p.jsonl line 1: field "messages": '],
    ['{"id":"a","messages":[{"content":"y"}]}', 'p.jsonl line 1: field "messages.0.role": '],
  ])('names the line and the problem: %j', (text, message) => {
    expect(() => parsePrompts(text, 'p.jsonl')).toThrow(message);
  });

  it('reads a plain-text file as one prompt per non-blank line', () => {
    expect(parsePrompts('def add(a, b):\r\n\n  {not json} here\nThe cat', 'p.txt')).toEqual([
      { id: 'line-1', prompt: 'def add(a, b):' },
      { id: 'line-3', prompt: '  {not json} here' },
      { id: 'line-4', prompt: 'The cat' },
    ]);
    // A first line that is a JSON array or a bare string is text too, not a broken JSONL file.
    expect(parsePrompts('[1, 2]\nx', 'p.txt').map((r) => r.prompt)).toEqual(['[1, 2]', 'x']);
  });

  it('refuses a binary file in one line instead of running it as text', async () => {
    const dir = tempDir('echo-binary-prompts-');
    try {
      const png = join(dir.path, 'image.png');
      writeFileSync(png, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52]));
      await expect(readPromptsFile(png)).rejects.toThrow(/image\.png line 1: bytes that are not UTF-8: this is not a text file/);
      expect(() => parsePrompts('hello\nwor\u0000ld', 'w.bin')).toThrow(/^w\.bin line 2: a NUL byte: this is not a text file/);
    } finally {
      dir.cleanup();
    }
  });

  it('reuses the file with suffixed ids and shifted arrivals when more requests are asked for', () => {
    const records = parsePrompts('{"id":"a","prompt":"x","arrivalMs":0}\n{"id":"b","prompt":"y","arrivalMs":10}', 'p');
    expect(takeRequests(records, 5).map((r) => [r.id, r.arrivalMs])).toEqual([
      ['a', 0],
      ['b', 10],
      ['a#2', 10],
      ['b#2', 20],
      ['a#3', 20],
    ]);
    expect(takeRequests(records, 1).map((r) => r.id)).toEqual(['a']);
  });
});

describe('chat prompts', () => {
  const CHAT = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
  const chat = ModelTokenizer.load(writeFixtureModel(join(tmp.path, 'chat'), { chatTemplate: CHAT }).dir);
  const plain = ModelTokenizer.load(writeFixtureModel(join(tmp.path, 'plain')).dir);
  const [conversation, text] = parsePrompts(
    ['{"id":"c","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"the cat"}]}', '{"id":"t","prompt":"the cat"}'].join('\n'),
    'p.jsonl',
  );

  it('renders a conversation with the target’s chat template and opens the assistant’s turn', () => {
    expect(conversation.messages).toHaveLength(2);
    expect(promptText(conversation, chat)).toBe('<|system|>Be brief.</s><|user|>the cat</s><|assistant|>');
    expect(promptText(text, chat)).toBe('the cat');
  });

  it('adds no special tokens to a rendered conversation (its template wrote them), and the tokenizer’s to plain text', () => {
    const rendered = promptText(conversation, chat);
    expect(encodePrompt(conversation, chat)).toEqual(chat.encode(rendered, { addSpecialTokens: false }));
    expect(encodePrompt(conversation, chat)[0]).not.toBe(chat.bosTokenId);
    expect(encodePrompt(text, chat)).toEqual(chat.encode('the cat'));
    expect(encodePrompt(text, chat)[0]).toBe(chat.bosTokenId);
  });

  it('names the prompt when the model has no chat template', () => {
    expect(() => encodePrompt(conversation, plain)).toThrow(/prompt "c" is a conversation, but .*tokenizer_config\.json: has no chat_template/);
    expect(encodePrompt(text, plain)).toEqual(plain.encode('the cat'));
  });
});
