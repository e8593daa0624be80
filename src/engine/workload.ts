// Workloads: prompts JSONL files, one request per line:
//   {"id": "code-0001", "domain": "code", "prompt": "def f(x):", "arrivalMs": 250}
//   {"id": "chat-0001", "messages": [{"role": "user", "content": "Write a haiku."}]}
// `id` and either `prompt` (plain text) or `messages` (a conversation, rendered by the target's
// chat template, as instruct models expect) are required; `domain` and `arrivalMs` (ms after the
// run starts) optional. Blank lines are skipped. A bad line is an error naming the file, the line
// and what is wrong.
// A file whose first non-blank line is not a JSON object is plain text instead: each non-blank
// line is one prompt, with ids "line-N" (its line number).
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ChatMessage } from './model/tokenizer.js';

export interface PromptRecord {
  id: string;
  domain?: string;
  /** Plain text (exactly one of `prompt` and `messages`). */
  prompt?: string;
  /** A conversation for the model's chat template, which then adds the assistant's turn. */
  messages?: ChatMessage[];
  arrivalMs?: number;
}

const PromptLineSchema = z
  .object({
    id: z.string().min(1),
    domain: z.string().optional(),
    prompt: z.string().optional(),
    messages: z.array(z.object({ role: z.string().min(1), content: z.string() })).min(1).optional(),
    arrivalMs: z.number().finite().min(0).optional(),
  })
  .refine((line) => (line.prompt === undefined) !== (line.messages === undefined), {
    path: ['prompt'],
    message: 'give either "prompt" (plain text) or "messages" (a conversation), not both or neither',
  });

/** What turning a record into token ids needs of a tokenizer (ModelTokenizer has it). */
export interface PromptTokenizer {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  applyChatTemplate(messages: ChatMessage[], options?: { addGenerationPrompt?: boolean }): string;
}

/**
 * The text the model reads for a record: its prompt, or its messages rendered by the chat
 * template with the assistant's turn opened (add_generation_prompt).
 */
export function promptText(record: PromptRecord, tokenizer: PromptTokenizer): string {
  if (record.messages === undefined) return record.prompt ?? '';
  try {
    return tokenizer.applyChatTemplate(record.messages, { addGenerationPrompt: true });
  } catch (err) {
    throw new Error(`prompt "${record.id}" is a conversation, but ${(err as Error).message}`);
  }
}

/**
 * A record's prompt tokens. Plain text gets the tokenizer's special tokens (BOS where the model
 * wants one); a rendered conversation already holds the template's own, so none are added again.
 */
export function encodePrompt(record: PromptRecord, tokenizer: PromptTokenizer): number[] {
  return tokenizer.encode(promptText(record, tokenizer), { addSpecialTokens: record.messages === undefined });
}

/** Whether a prompts file is JSON Lines (its first non-blank line is a JSON object) or plain lines. */
export function promptsFormat(text: string): 'jsonl' | 'lines' {
  const first = text.split('\n').find((line) => line.trim() !== '')?.trim() ?? '';
  if (!first.startsWith('{')) return 'lines';
  try {
    const value: unknown = JSON.parse(first);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? 'jsonl' : 'lines';
  } catch {
    // A first line that opens a brace but is not JSON is a broken JSONL file, not prose: say so.
    return 'jsonl';
  }
}

/** A prompts file's records: JSON Lines, or one plain-text prompt per non-blank line. */
export function parsePrompts(text: string, source: string): PromptRecord[] {
  const records: PromptRecord[] = [];
  const seen = new Map<string, number>();
  const lines = text.split('\n');
  if (promptsFormat(text) === 'lines') {
    for (let i = 0; i < lines.length; i++) {
      const prompt = lines[i].replace(/\r$/, '');
      if (prompt.trim() !== '') records.push({ id: `line-${i + 1}`, prompt });
    }
    if (records.length === 0) throw new Error(`${source}: no prompts in the file`);
    return records;
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '') continue;
    const where = `${source} line ${i + 1}`;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      throw new Error(`${where}: not valid JSON (${(err as Error).message})`);
    }
    const parsed = PromptLineSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue.path.length > 0 ? `field "${issue.path.join('.')}"` : 'the line';
      throw new Error(`${where}: ${field}: ${issue.message}`);
    }
    const first = seen.get(parsed.data.id);
    if (first !== undefined) throw new Error(`${where}: id "${parsed.data.id}" already used on line ${first}`);
    seen.set(parsed.data.id, i + 1);
    records.push(parsed.data);
  }
  if (records.length === 0) throw new Error(`${source}: no prompts in the file`);
  return records;
}

export function readPromptsFile(path: string): PromptRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`${path}: cannot read the prompts file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return parsePrompts(text, path);
}

/**
 * `count` requests from the records, in file order; when more are asked for than the file holds,
 * it starts over with ids suffixed "#2", "#3", … (arrival times shift by the file's last arrival).
 */
export function takeRequests(records: readonly PromptRecord[], count: number): PromptRecord[] {
  const out: PromptRecord[] = [];
  const span = Math.max(0, ...records.map((r) => r.arrivalMs ?? 0));
  for (let i = 0; i < count; i++) {
    const round = Math.floor(i / records.length);
    const r = records[i % records.length];
    if (round === 0) out.push(r);
    else {
      const copy: PromptRecord = { ...r, id: `${r.id}#${round + 1}` };
      if (r.arrivalMs !== undefined) copy.arrivalMs = r.arrivalMs + round * span;
      out.push(copy);
    }
  }
  return out;
}
