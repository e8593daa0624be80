// Workloads: prompts JSONL files, one request per line:
//   {"id": "code-0001", "domain": "code", "prompt": "def f(x):", "arrivalMs": 250}
// `id` and `prompt` are required; `domain` and `arrivalMs` (ms after the run starts) optional.
// Blank lines are skipped. A bad line is an error naming the file, the line and what is wrong.
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export interface PromptRecord {
  id: string;
  domain?: string;
  prompt: string;
  arrivalMs?: number;
}

const PromptLineSchema = z.object({
  id: z.string().min(1),
  domain: z.string().optional(),
  prompt: z.string(),
  arrivalMs: z.number().finite().min(0).optional(),
});

export function parsePrompts(text: string, source: string): PromptRecord[] {
  const records: PromptRecord[] = [];
  const seen = new Map<string, number>();
  const lines = text.split('\n');
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
