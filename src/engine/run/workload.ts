// Workloads: prompts JSONL files, one request per line:
//   {"id": "code-0001", "domain": "code", "prompt": "def f(x):", "arrivalMs": 250}
//   {"id": "chat-0001", "messages": [{"role": "user", "content": "Write a haiku."}]}
// `id` and either `prompt` (plain text) or `messages` (a conversation, rendered by the target's
// chat template, as instruct models expect) are required; `domain` and `arrivalMs` (ms after the
// run starts) optional. Blank lines are skipped. A bad line is an error naming the file, the line
// and what is wrong (never quoting it: the file may not be a prompts file at all).
// A file whose first non-blank line is not a JSON object is plain text instead: each non-blank
// line is one prompt, with ids "line-N" (its line number).
// Files are read line by line, never whole, and only as far as the records a run needs.
import { jsonErrorPosition } from '../json-error.js';
import { open } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { ChatMessage } from '../model/tokenizer.js';
import { Refusal } from '../refusal.js';

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
    throw new Refusal(`prompt "${record.id}" is a conversation, but ${(err as Error).message}`);
  }
}

/**
 * A record's prompt tokens. Plain text gets the tokenizer's special tokens (BOS where the model
 * wants one); a rendered conversation already holds the template's own, so none are added again.
 */
export function encodePrompt(record: PromptRecord, tokenizer: PromptTokenizer): number[] {
  return tokenizer.encode(promptText(record, tokenizer), { addSpecialTokens: record.messages === undefined });
}

/** Whether a line opens a JSON Lines file (a JSON object) or a plain-text one. */
function lineFormat(first: string): 'jsonl' | 'lines' {
  const line = first.trim();
  if (!line.startsWith('{')) return 'lines';
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? 'jsonl' : 'lines';
  } catch {
    // A first line that opens a brace but is not JSON is a broken JSONL file, not prose: say so.
    return 'jsonl';
  }
}

/** Whether a prompts file is JSON Lines (its first non-blank line is a JSON object) or plain lines. */
export function promptsFormat(text: string): 'jsonl' | 'lines' {
  return lineFormat(text.split('\n').find((line) => line.trim() !== '') ?? '');
}

/**
 * Checks lines of a prompts file one by one: the first non-blank one decides the format; JSON
 * Lines must be valid JSON of the schema with ids used once, plain lines are prompts as they stand.
 */
class PromptLineParser {
  readonly records: PromptRecord[] = [];
  private readonly seen = new Map<string, number>();
  private format: 'jsonl' | 'lines' | null = null;

  constructor(private readonly source: string) {}

  add(raw: string, lineNumber: number): void {
    // A binary file (an image, a model's weights) decodes to NUL bytes and U+FFFD for every byte
    // that is not UTF-8; run as text it would be a prompt of noise.
    const binary = /[\u0000\ufffd]/.exec(raw);
    if (binary !== null) {
      throw new Refusal(`${this.source} line ${lineNumber}: ${binary[0] === '\u0000' ? 'a NUL byte' : 'bytes that are not UTF-8'}: this is not a text file (a prompts file is plain text, one prompt a line, or JSONL)`);
    }
    const line = raw.trim();
    if (line === '') return;
    this.format ??= lineFormat(line);
    if (this.format === 'lines') {
      this.records.push({ id: `line-${lineNumber}`, prompt: raw.replace(/\r$/, '') });
      return;
    }
    const where = `${this.source} line ${lineNumber}`;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      throw new Refusal(`${where}: not valid JSON${jsonErrorPosition(err)}`);
    }
    const parsed = PromptLineSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue.path.length > 0 ? `field "${issue.path.join('.')}"` : 'the line';
      throw new Refusal(`${where}: ${field}: ${issue.message}`);
    }
    const first = this.seen.get(parsed.data.id);
    if (first !== undefined) throw new Refusal(`${where}: id "${parsed.data.id}" already used on line ${first}`);
    this.seen.set(parsed.data.id, lineNumber);
    this.records.push(parsed.data);
  }

  done(): PromptRecord[] {
    if (this.records.length === 0) throw new Refusal(`${this.source}: no prompts in the file`);
    return this.records;
  }
}

export { jsonErrorPosition };

export function parsePrompts(text: string, source: string): PromptRecord[] {
  const parser = new PromptLineParser(source);
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) parser.add(lines[i], i + 1);
  return parser.done();
}

/**
 * The records of a prompts file, read as a stream of lines; with `limit`, only the first `limit`
 * records are read (lines after them are not looked at).
 */
export async function readPromptsFile(path: string, options: { limit?: number } = {}): Promise<PromptRecord[]> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch (err) {
    throw new Refusal(`${path}: cannot read the prompts file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const parser = new PromptLineParser(path);
  const stream = handle.createReadStream({ encoding: 'utf8' });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  try {
    let lineNumber = 0;
    for await (const line of lines) {
      parser.add(line, ++lineNumber);
      if (options.limit !== undefined && parser.records.length >= options.limit) break;
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw code ? new Refusal(`${path}: cannot read the prompts file (${code})`) : err;
  } finally {
    lines.close();
    stream.destroy();
    await handle.close().catch(() => {});
  }
  return parser.done();
}

/** The latest arrival among records (0 when none has one); a loop, since a spread overflows the stack on large files. */
function lastArrival(records: readonly PromptRecord[]): number {
  let span = 0;
  for (const r of records) if ((r.arrivalMs ?? 0) > span) span = r.arrivalMs ?? 0;
  return span;
}

/**
 * `count` requests from the records, in file order; when more are asked for than the file holds,
 * it starts over with ids suffixed "#2", "#3", … (arrival times shift by the file's last arrival).
 */
export function takeRequests(records: readonly PromptRecord[], count: number): PromptRecord[] {
  const out: PromptRecord[] = [];
  const span = lastArrival(records);
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

/** A note when `count` requests repeat a file of fewer prompts (null when they do not). */
export function repeatNote(records: readonly PromptRecord[], count: number, source: string): string | null {
  if (count <= records.length) return null;
  const rounds = Math.ceil(count / records.length);
  const ids = `${records[0].id}#2${records.length > 1 || rounds > 2 ? ', …' : ''}`;
  return `note: ${source} holds ${records.length} prompt${records.length === 1 ? '' : 's'}; the ${count} requests repeat ${records.length === 1 ? 'it' : 'them'} (ids ${ids}); pass --requests ${records.length} to run each once`;
}

/**
 * Characters per token assumed when deciding, from a prefix, that a prompt cannot fit: a prompt
 * longer than (limit + 1) × this many characters is first tokenised only that far.
 */
export const PREFIX_CHARS_PER_TOKEN = 32;
/** Slack for the tokens at a cut prefix's end, which merge differently in the whole text. */
const PREFIX_BOUNDARY_SLACK = 16;

/**
 * A record's prompt tokens when at most `maxTokens` of them, else null. A long prompt is judged on a
 * bounded prefix first, so one that cannot fit is refused without tokenising all of it.
 */
export function encodePromptWithin(record: PromptRecord, tokenizer: PromptTokenizer, maxTokens: number): number[] | null {
  if (maxTokens < 1) return null;
  const text = promptText(record, tokenizer);
  const addSpecialTokens = record.messages === undefined;
  const bound = (maxTokens + 1) * PREFIX_CHARS_PER_TOKEN;
  if (text.length > bound) {
    // Never cut a surrogate pair in two.
    const cut = /[\uD800-\uDBFF]/.test(text[bound - 1]) ? bound - 1 : bound;
    const head = tokenizer.encode(text.slice(0, cut), { addSpecialTokens });
    if (head.length > maxTokens + PREFIX_BOUNDARY_SLACK) return null;
  }
  const tokens = tokenizer.encode(text, { addSpecialTokens });
  return tokens.length === 0 || tokens.length > maxTokens ? null : tokens;
}

/** Prompts tokenised; the ones that cannot run (too long for the context, or no tokens at all) left out and named. */
export interface FittedPrompts {
  items: { record: PromptRecord; promptTokens: number[] }[];
  tooLong: string[];
  empty: string[];
}

/** Each record's tokens, leaving out empty prompts and those of more than `maxTokens` tokens. */
export function fitPrompts(records: readonly PromptRecord[], tokenizer: PromptTokenizer, maxTokens: number): FittedPrompts {
  const fitted: FittedPrompts = { items: [], tooLong: [], empty: [] };
  for (const record of records) {
    // An empty text is no prompt, even where the tokenizer would give it a BOS token.
    if (promptText(record, tokenizer).length === 0) {
      fitted.empty.push(record.id);
      continue;
    }
    const promptTokens = encodePromptWithin(record, tokenizer, maxTokens);
    if (promptTokens !== null) fitted.items.push({ record, promptTokens });
    else fitted.tooLong.push(record.id);
  }
  return fitted;
}

const idList = (ids: readonly string[]) => `${ids.slice(0, 5).map((id) => `"${id}"`).join(', ')}${ids.length > 5 ? ` and ${ids.length - 5} more` : ''}`;

/** One line per kind of prompt left out, naming them (a few ids, then how many more). */
export function skippedNotes(fitted: FittedPrompts, maxTokens: number, why: string): string[] {
  const plural = (n: number) => `${n} prompt${n === 1 ? '' : 's'}`;
  return [
    ...(fitted.tooLong.length > 0 ? [`note: skipped ${plural(fitted.tooLong.length)} longer than ${maxTokens} tokens (${why}): ${idList(fitted.tooLong)}`] : []),
    ...(fitted.empty.length > 0 ? [`note: skipped ${plural(fitted.empty.length)} with no text: ${idList(fitted.empty)}`] : []),
  ];
}
