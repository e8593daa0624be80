// Tokenizer of a model folder: tokenizer.json through @huggingface/tokenizers, chat templates from
// tokenizer_config.json through @huggingface/jinja, and the draft/target vocabulary check.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { ModelLoadError } from './errors.js';
import { jsonErrorPosition } from '../json-error.js';

export interface ChatMessage {
  role: string;
  content: string;
}

function readJson(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ModelLoadError(path, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  try {
    const json = JSON.parse(text) as unknown;
    if (json === null || typeof json !== 'object' || Array.isArray(json)) throw new Error('expected a JSON object');
    return json as Record<string, unknown>;
  } catch (err) {
    throw new ModelLoadError(path, err instanceof SyntaxError ? `not valid JSON${jsonErrorPosition(err)}` : `not valid JSON (${(err as Error).message})`);
  }
}

/** A special token in tokenizer_config.json is a string or an AddedToken object with `content`. */
function tokenContent(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (value !== null && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') {
    return (value as { content: string }).content;
  }
  return null;
}

/** config.json's vocab_size next to a tokenizer, or null when there is none to read (other checks report a bad config.json). */
function configVocabSize(dir: string): number | null {
  try {
    const size = (JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { vocab_size?: unknown }).vocab_size;
    return typeof size === 'number' && Number.isInteger(size) && size > 0 ? size : null;
  } catch {
    return null;
  }
}

export class ModelTokenizer {
  readonly dir: string;
  /** Tokens in the vocabulary, added tokens included. */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: number[];
  readonly chatTemplate: string | null;
  private readonly tokenizer: Tokenizer;
  private readonly config: Record<string, unknown>;
  private readonly idToToken: (string | undefined)[];

  private constructor(dir: string, tokenizer: Tokenizer, config: Record<string, unknown>, extraEosIds: number[]) {
    this.dir = dir;
    this.tokenizer = tokenizer;
    this.config = config;
    const vocab = tokenizer.get_vocab(true);
    let maxId = -1;
    for (const id of vocab.values()) maxId = Math.max(maxId, id);
    this.idToToken = new Array(maxId + 1);
    for (const [token, id] of vocab) this.idToToken[id] = token;
    this.vocabSize = maxId + 1;
    const idOf = (key: string): number | null => {
      const content = tokenContent(config[key]);
      if (content === null) return null;
      return tokenizer.token_to_id(content) ?? null;
    };
    this.bosTokenId = idOf('bos_token');
    const eos = new Set<number>(extraEosIds);
    const eosId = idOf('eos_token');
    if (eosId !== null) eos.add(eosId);
    this.eosTokenIds = [...eos].sort((a, b) => a - b);
    const tpl = config.chat_template;
    if (typeof tpl === 'string') this.chatTemplate = tpl;
    else if (Array.isArray(tpl)) {
      const named = tpl as { name?: string; template?: string }[];
      this.chatTemplate = (named.find((t) => t.name === 'default') ?? named[0])?.template ?? null;
    } else this.chatTemplate = null;
  }

  /**
   * Loads tokenizer.json (+ tokenizer_config.json when present) from a model folder.
   * `eosTokenIds` from config.json / generation_config.json are merged with the tokenizer's.
   */
  static load(dir: string, eosTokenIds: number[] = []): ModelTokenizer {
    const path = join(dir, 'tokenizer.json');
    if (!existsSync(path)) throw new ModelLoadError(path, 'missing (the model folder needs a tokenizer.json)');
    const json = readJson(path);
    const configPath = join(dir, 'tokenizer_config.json');
    const config = existsSync(configPath) ? readJson(configPath) : {};
    let tokenizer: Tokenizer;
    try {
      tokenizer = new Tokenizer(json, config);
    } catch (err) {
      throw new ModelLoadError(path, `unsupported or malformed tokenizer (${(err as Error).message.split('\n')[0]})`);
    }
    const loaded = new ModelTokenizer(dir, tokenizer, config, eosTokenIds);
    // A model may pad its vocabulary past the tokenizer's, never the other way round: an id from
    // vocab_size on has no embedding row, and a pair of two such folders would run on wrong rows.
    const modelVocab = configVocabSize(dir);
    if (modelVocab !== null && loaded.vocabSize > modelVocab) {
      throw new ModelLoadError(path, `holds ${loaded.vocabSize} token ids but config.json's vocab_size is ${modelVocab}: ids from ${modelVocab} on have no embedding row (is it another model's tokenizer?)`);
    }
    return loaded;
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    const addSpecial = options.addSpecialTokens ?? true;
    const ids = this.tokenizer.encode(text, { add_special_tokens: addSpecial }).ids;
    // tokenizer_config.json's add_bos_token is honoured by transformers but not by the tokenizer
    // library; a model trained with BOS-prefixed text needs it.
    if (addSpecial && this.config.add_bos_token === true && this.bosTokenId !== null && ids[0] !== this.bosTokenId) {
      return [this.bosTokenId, ...ids];
    }
    return ids;
  }

  decode(ids: ArrayLike<number>, options: { skipSpecialTokens?: boolean } = {}): string {
    return this.tokenizer.decode(Array.from(ids), { skip_special_tokens: options.skipSpecialTokens ?? false });
  }

  /** The vocabulary entry of an id (e.g. "Ġthe"), or null for ids the tokenizer does not define. */
  tokenString(id: number): string | null {
    return this.idToToken[id] ?? null;
  }

  /** An id's text as it reads in decoded output (e.g. " the"). */
  tokenText(id: number): string {
    return this.tokenString(id) === null ? '' : this.decode([id]);
  }

  isEos(id: number): boolean {
    return this.eosTokenIds.includes(id);
  }

  get hasChatTemplate(): boolean {
    return this.chatTemplate !== null;
  }

  /** Renders the chat template (tokenizer_config.json) to a prompt string. */
  applyChatTemplate(messages: ChatMessage[], options: { addGenerationPrompt?: boolean } = {}): string {
    if (this.chatTemplate === null) {
      throw new ModelLoadError(join(this.dir, 'tokenizer_config.json'), 'has no chat_template; pass plain text instead');
    }
    const specials: Record<string, string> = {};
    for (const key of ['bos_token', 'eos_token', 'unk_token', 'pad_token']) {
      const content = tokenContent(this.config[key]);
      if (content !== null) specials[key] = content;
    }
    try {
      return new Template(this.chatTemplate).render({
        ...specials,
        messages,
        add_generation_prompt: options.addGenerationPrompt ?? true,
      });
    } catch (err) {
      throw new ModelLoadError(join(this.dir, 'tokenizer_config.json'), `chat_template failed: ${(err as Error).message.split('\n')[0]}`);
    }
  }

  /** Token string → id, for comparisons between tokenizers. */
  vocabulary(): Map<string, number> {
    return this.tokenizer.get_vocab(true);
  }

  /** A short hash of the whole vocabulary (token strings and ids), for traces and profiles. */
  vocabularyFingerprint(): string {
    const entries = [...this.vocabulary().entries()].sort((a, b) => a[1] - b[1]);
    return createHash('sha256').update(JSON.stringify(entries)).digest('hex').slice(0, 16);
  }
}

/** Throws a one-line error unless draft and target map every token string to the same id. */
export function assertSameVocabulary(draft: ModelTokenizer, target: ModelTokenizer): void {
  const d = draft.vocabulary();
  const t = target.vocabulary();
  const where = `${draft.dir} vs ${target.dir}`;
  if (d.size !== t.size) {
    throw new ModelLoadError(where, `draft and target vocabularies differ: draft has ${d.size} tokens, target has ${t.size}`);
  }
  for (const [token, id] of d) {
    const other = t.get(token);
    if (other !== id) {
      const shown = JSON.stringify(token);
      throw new ModelLoadError(
        where,
        other === undefined
          ? `draft and target vocabularies differ: draft token ${shown} (id ${id}) is not in the target`
          : `draft and target vocabularies differ: token ${shown} is id ${id} in the draft but ${other} in the target`,
      );
    }
  }
}
