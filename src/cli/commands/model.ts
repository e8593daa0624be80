// `echo-studio model info DIR` and `echo-studio model check DIR --text "..."`: inspect a Hugging
// Face model folder and validate that the runtime computes sensible next-token predictions.
// `echo-studio model cache`: list, clear or prune the built graphs.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { resolve } from 'node:path';
import { cacheRoot, clearGraphCache, defaultMaxLength, describeHeadFolder, folderMemory, formatGiB, type GraphCacheEntry, graphFileBytes, type GraphRemoval, graphsDir, type HeadDescription, isGraphCached, isHeadFolder, listGraphCache, loadHead, loadModel, machineMemoryBytes, MEMORY_SHARE, type MemoryEstimate, type ModelInfo, ModelTokenizer, openHeadFolder, openModelFolder, parseModelConfig, peakBytes, pruneUnusedGraphs, readConfigJson, usableBytes } from '../../engine/index.js';
import { knobOption } from '../flags.js';

/** What loading the folder would take, at every precision, before anything loads. */
export interface MemoryReport {
  slots: number;
  maxLength: number;
  /** This machine's memory as the fit check reads it ($ECHO_STUDIO_MEMORY, else os.totalmem()). */
  machineBytes: number;
  /** What a load may plan to use of it. */
  usableBytes: number;
  precisions: Array<MemoryEstimate & { fits: boolean }>;
}

export interface ModelInfoReport extends ModelInfo {
  tokenizerVocabSize: number | null;
  /** Why the folder's tokenizer cannot be used with it (missing, malformed, more ids than vocab_size), or null. */
  tokenizerProblem: string | null;
  chatTemplate: boolean;
  graphCached: boolean;
  graphPath: string;
  graphBytes: number | null;
  memory: MemoryReport;
}

export function modelInfoReport(dir: string, load: { slots?: number; maxLength?: number } = {}): ModelInfoReport {
  const folder = openModelFolder(resolve(dir), cacheRoot());
  const slots = load.slots ?? 8;
  const maxLength = load.maxLength ?? defaultMaxLength(folder.config);
  const machineBytes = machineMemoryBytes();
  const usable = usableBytes(machineBytes);
  const memory: MemoryReport = {
    slots,
    maxLength,
    machineBytes,
    usableBytes: usable,
    precisions: folderMemory(folder, slots, maxLength).map((e) => ({ ...e, fits: peakBytes(e) <= usable })),
  };
  let tokenizer: ModelTokenizer | null = null;
  let tokenizerProblem: string | null = null;
  try {
    tokenizer = ModelTokenizer.load(folder.dir, folder.info.eosTokenIds);
  } catch (err) {
    // `info` still reports the rest, and says why the tokenizer cannot serve this model.
    tokenizerProblem = (err as Error).message.split('\n')[0];
  }
  const cached = isGraphCached(folder);
  return {
    ...folder.info,
    tokenizerVocabSize: tokenizer?.vocabSize ?? null,
    tokenizerProblem,
    chatTemplate: tokenizer?.hasChatTemplate ?? false,
    graphCached: cached,
    graphPath: folder.graphPath,
    graphBytes: cached ? graphFileBytes(folder.graphPath) : null,
    memory,
  };
}

export interface HeadInfoReport extends HeadDescription {
  tokenizerVocabSize: number | null;
}

/** `model info` of an EAGLE-3 head: what it is and what target it drafts for, read without one. */
export function headInfoReport(dir: string): HeadInfoReport {
  const head = describeHeadFolder(resolve(dir));
  let tokenizerVocabSize: number | null = null;
  try {
    tokenizerVocabSize = ModelTokenizer.load(head.dir).vocabSize;
  } catch {
    tokenizerVocabSize = null; // a head may ship without the target's tokenizer files
  }
  return { ...head, tokenizerVocabSize };
}

export function headInfoLines(h: HeadInfoReport): string[] {
  const layers = h.featureLayers === null ? "EAGLE-3's default rule (entering layers 2, L/2 and L-3)" : `outputs of layers ${h.featureLayers.join(', ')} (0-based)`;
  return [
    `folder        ${h.dir}`,
    `architecture  ${h.architecture} (an EAGLE-3 draft head: it drafts for a target from the target's features, and runs only beside it)`,
    `parameters    ${h.parameters.toLocaleString('en-US')}` + (h.ownEmbedding ? ' (its own embedding table included)' : " (it borrows the target's embedding table)"),
    `dtype         ${h.dtype} on disk (computed in float32)`,
    `layers        ${h.numLayers} decoder layer${h.numLayers === 1 ? '' : 's'}, hidden ${h.hiddenSize}, MLP ${h.intermediateSize}, heads ${h.numHeads} (kv ${h.numKvHeads}), head dim ${h.headDim}`,
    `vocabulary    drafts over ${h.draftVocabSize} of the target's ${h.vocabSize} ids` + (h.tokenizerVocabSize === null ? ', tokenizer missing (the target\'s is used)' : `, ${h.tokenizerVocabSize} (tokenizer)`),
    `features      3 × ${h.targetHiddenSize}: ${layers}`,
    `target        a language model of hidden size ${h.targetHiddenSize} and vocabulary ${h.vocabSize}` + (h.featureLayers === null ? '' : ` with at least ${Math.max(...h.featureLayers) + 1} layers`),
    `max positions ${h.maxPositions}`,
    `use           run --draft ${h.dir} --target TARGET_DIR (or --draft-kind head for the bundled pair); model check ${h.dir} --target TARGET_DIR --text "..."`,
  ];
}

/** `model info`'s memory lines: one per precision. */
export function memoryLines(m: MemoryReport): string[] {
  return [
    `memory        for ${m.slots} KV slots of ${m.maxLength} rows (--slots, --max-length); a load may use ${formatGiB(m.usableBytes)} here (${Math.round(MEMORY_SHARE * 100)} % of ${formatGiB(m.machineBytes)})`,
    ...m.precisions.map(
      (e) =>
        `  ${e.precision.padEnd(8)}    weights ${formatGiB(e.weightBytes)} + KV ${formatGiB(e.kvBytes)}: about ${formatGiB(e.runningBytes)} running, ${formatGiB(e.buildPeakBytes)} at the first load's graph build · ${e.fits ? 'fits' : 'does not fit'}`,
    ),
  ];
}

export interface ModelCheckReport {
  /** The tokens checked: the text's, cut to the model's positions when it is longer. */
  tokens: number[];
  positions: { top: { id: number; token: string; logit: number }[] }[];
  /** Set when the text was longer than the model's context and only its start was checked. */
  note?: string;
}

/**
 * A model predicts nothing sound past its positions (RoPE and trained lengths end there), so a
 * longer text is cut to them, and the report says so, rather than evaluated past the context.
 */
function withinContext(tokens: number[], positions: number): { tokens: number[]; note?: string } {
  if (tokens.length <= positions) return { tokens };
  return {
    tokens: tokens.slice(0, positions),
    note: `the text is ${tokens.length} tokens, past the model's context of ${positions} positions: checked its first ${positions} tokens only`,
  };
}

export async function modelCheck(dir: string, text: string, options: { top?: number; threads?: number } = {}): Promise<ModelCheckReport> {
  const folder = openModelFolder(resolve(dir), cacheRoot());
  const tokenizer = ModelTokenizer.load(folder.dir, folder.info.eosTokenIds);
  const encoded = tokenizer.encode(text);
  if (encoded.length === 0) throw new Error(`the text ${JSON.stringify(text)} encodes to no tokens`);
  const { tokens, note } = withinContext(encoded, folder.info.maxPositions);
  const top = options.top ?? 5;
  const session = await loadModel(folder.dir, { threads: options.threads, slots: 1, maxLength: tokens.length });
  try {
    const slot = session.allocSlot();
    const rows = tokens.map((_, i) => i);
    const result = await session.forward([{ slot, tokens, parents: rows.map((i) => i - 1) }], { logitsRows: rows });
    const vocab = session.info.vocabSize;
    const logits = result.logits!;
    const positions = rows.map((row) => {
      const slice = logits.subarray(row * vocab, (row + 1) * vocab);
      const best: number[] = [];
      for (let id = 0; id < vocab; id++) {
        if (best.length < top || slice[id] > slice[best[best.length - 1]]) {
          best.push(id);
          best.sort((a, b) => slice[b] - slice[a]);
          if (best.length > top) best.pop();
        }
      }
      return { top: best.map((id) => ({ id, token: tokenizer.tokenText(id), logit: slice[id] })) };
    });
    return { tokens, positions, ...(note ? { note } : {}) };
  } finally {
    await session.release();
  }
}

/** The best `top` ids of one row of logits, by logit, descending. */
function topIds(slice: Float32Array, top: number): number[] {
  const best: number[] = [];
  for (let id = 0; id < slice.length; id++) {
    if (best.length < top || slice[id] > slice[best[best.length - 1]]) {
      best.push(id);
      best.sort((a, b) => slice[b] - slice[a]);
      if (best.length > top) best.pop();
    }
  }
  return best;
}

/**
 * `model check HEAD --target TARGET`: an EAGLE-3 head teacher-forced over the text. Position i
 * holds the head's depth-0 prediction of the token after tokens[i], as a model's check does: the
 * head's row that reads the target's features of tokens[i − 1] and the embedding of tokens[i].
 * Position 0 has none (no token before it for the target to have seen). Ids and tokens are the
 * target's (draft ids mapped through d2t); logits are the head's over its draft vocabulary.
 */
export async function headCheck(headDir: string, targetDir: string, text: string, options: { top?: number; threads?: number } = {}): Promise<ModelCheckReport> {
  const target = resolve(targetDir);
  const { path, json } = readConfigJson(target);
  const targetConfig = parseModelConfig(json, path);
  const { featureBoundaries } = openHeadFolder(resolve(headDir), targetConfig);
  const tokenizer = ModelTokenizer.load(target, targetConfig.eosTokenIds);
  const encoded = tokenizer.encode(text);
  if (encoded.length === 0) throw new Error(`the text ${JSON.stringify(text)} encodes to no tokens`);
  const { tokens, note } = withinContext(encoded, targetConfig.maxPositions);
  const top = options.top ?? 5;
  const model = await loadModel(target, { threads: options.threads, slots: 1, maxLength: tokens.length, featureBoundaries });
  const head = await loadHead(resolve(headDir), target, { threads: options.threads, slots: 1, maxLength: tokens.length });
  try {
    const positions: ModelCheckReport['positions'] = [{ top: [] }];
    const n = tokens.length - 1;
    if (n > 0) {
      const rows = Array.from({ length: n }, (_, i) => i);
      const slot = model.allocSlot();
      const { features } = await model.forward([{ slot, tokens: tokens.slice(0, n), parents: rows.map((i) => i - 1) }], { featureRows: rows });
      const headSlot = head.allocSlot();
      head.pushFeatures(headSlot, features!);
      const { logits } = await head.forward([{ slot: headSlot, tokens: tokens.slice(1), parents: rows.map((i) => i - 1) }], { logitsRows: rows });
      const vd = head.draftVocabSize;
      for (const row of rows) {
        const slice = logits!.subarray(row * vd, (row + 1) * vd);
        positions.push({
          top: topIds(slice, Math.min(top, vd)).map((draftId) => {
            const id = head.draftToTarget[draftId];
            return { id, token: tokenizer.tokenText(id), logit: slice[draftId] };
          }),
        });
      }
    }
    return { tokens, positions, ...(note ? { note } : {}) };
  } finally {
    await Promise.all([model.release(), head.release()]);
  }
}

export interface ModelCacheReport {
  /** The graphs folder of the cache ($ECHO_STUDIO_CACHE or ~/.cache/echo-studio). */
  dir: string;
  entries: GraphCacheEntry[];
  totalBytes: number;
}

export function modelCacheReport(root = cacheRoot()): ModelCacheReport {
  const entries = listGraphCache(root);
  return { dir: graphsDir(root), entries, totalBytes: entries.reduce((sum, e) => sum + e.bytes, 0) };
}

export interface ModelCacheRemovalReport extends GraphRemoval {
  dir: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** `--clear` (days null) or `--prune-unused DAYS`. */
export function modelCacheRemove(unusedDays: number | null, root = cacheRoot()): ModelCacheRemovalReport {
  const removal = unusedDays === null ? clearGraphCache(root) : pruneUnusedGraphs(unusedDays * DAY_MS, root);
  return { dir: graphsDir(root), ...removal };
}

function formatBytes(n: number): string {
  if (n >= 1 << 30) return `${(n / (1 << 30)).toFixed(2)} GiB`;
  return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

/** ISO time to the minute, e.g. 2026-11-29T12:00Z. */
function formatTime(iso: string | null): string {
  return iso === null ? 'unknown' : `${iso.slice(0, 16)}Z`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function parseDays(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value)) throw new InvalidArgumentError('expected a number of days >= 0');
  return Number(value);
}

function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

export function register(program: Command): void {
  const model = program.command('model').description('inspect and validate a Hugging Face model folder');

  model
    .command('info')
    .description('architecture, parameters, dtype, vocabulary, graph cache status, and the memory a load takes at each precision')
    .argument('<dir>', 'model folder (config.json, safetensors, tokenizer.json), or an EAGLE-3 head folder')
    .option('--slots <n>', 'KV slots (requests in flight) to size the memory for (default 8)', parsePositiveInt)
    .option('--max-length <n>', 'KV rows per slot to size the memory for (default min(2048, the model\'s positions))', parsePositiveInt)
    .option('--json', 'print JSON')
    .action((dir: string, options: { json?: boolean; slots?: number; maxLength?: number }) => {
      if (isHeadFolder(resolve(dir))) {
        const h = headInfoReport(dir);
        process.stdout.write(options.json ? `${JSON.stringify(h, null, 2)}\n` : `${headInfoLines(h).join('\n')}\n`);
        return;
      }
      const r = modelInfoReport(dir, { slots: options.slots, maxLength: options.maxLength });
      if (options.json) {
        process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      const lines = [
        `folder        ${r.dir}`,
        `architecture  ${r.architecture}`,
        `parameters    ${r.parameters.toLocaleString('en-US')} (embeddings included)`,
        `dtype         ${r.dtype} on disk (computed in float32)`,
        `layers        ${r.numLayers}, hidden ${r.hiddenSize}, heads ${r.numHeads} (kv ${r.numKvHeads}), head dim ${r.headDim}`,
        `vocabulary    ${r.vocabSize} (model)` + (r.tokenizerProblem !== null ? `; warning: tokenizer not usable: ${r.tokenizerProblem}` : `, ${r.tokenizerVocabSize} (tokenizer)`),
        `max positions ${r.maxPositions}`,
        `bos / eos     ${r.bosTokenId ?? '-'} / ${r.eosTokenIds.join(', ') || '-'}`,
        `chat template ${r.chatTemplate ? 'yes' : 'no'}`,
        `graph cache   ${r.graphCached ? `built, ${formatBytes(r.graphBytes ?? 0)}: ${r.graphPath}` : `not built yet (first load builds ${r.graphPath})`}`,
        ...memoryLines(r.memory),
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });

  model
    .command('cache')
    .description('list the built graphs in the graph cache (default), or delete them')
    .option('--json', 'print JSON')
    .addOption(new Option('--clear', 'delete every cached graph').conflicts('pruneUnused'))
    .option('--prune-unused <days>', 'delete the graphs not used for DAYS days (0: all)', parseDays)
    .action((options: { json?: boolean; clear?: boolean; pruneUnused?: number }) => {
      if (options.clear || options.pruneUnused !== undefined) {
        const r = modelCacheRemove(options.clear ? null : options.pruneUnused!);
        if (options.json) process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
        else process.stdout.write(`deleted ${plural(r.removed.length, 'graph')} (${formatBytes(r.freedBytes)}) from ${r.dir}\n`);
        if (r.failed.length > 0) {
          const first = r.failed[0];
          const more = r.failed.length > 1 ? ` and ${r.failed.length - 1} more` : '';
          throw new Error(`${first.path}: cannot delete (${first.reason})${more}`);
        }
        return;
      }
      const r = modelCacheReport();
      if (options.json) {
        process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
        return;
      }
      const rows = r.entries.map((e) =>
        [
          e.key,
          e.architecture ?? 'unknown',
          e.graphVersion === null ? 'v?' : `v${e.graphVersion}`,
          formatBytes(e.bytes),
          `built ${formatTime(e.builtAt)}`,
          `used ${formatTime(e.lastUsedAt)}`,
          e.source ?? 'unknown source',
        ],
      );
      const widths = rows.reduce((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), [] as number[]);
      const lines = [
        `graph cache ${r.dir}`,
        ...rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join('  ')),
        `total ${plural(r.entries.length, 'graph')}, ${formatBytes(r.totalBytes)}`,
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });

  const check = model
    .command('check')
    .description('token ids of a text and, at each position, the top next-token predictions with logits')
    .argument('<dir>', 'model folder, or an EAGLE-3 head folder (with --target)')
    .requiredOption('--text <text>', 'text to run through the model')
    .option('--target <dir>', 'for a head: the target whose features it reads (its tokenizer encodes the text)')
    .option('--top <n>', 'predictions per position', parsePositiveInt, 5);
  // The registry's --threads (its range: 1 to twice this machine's cores), with this command's default.
  knobOption(check, 'threads', { help: 'onnxruntime threads', default: 2 });
  check
    .option('--json', 'print {"tokens":[ids],"positions":[{"top":[{"id","token","logit"}]}],"note"?} (note: the text was cut to the context)')
    .action(async (dir: string, options: { text: string; top: number; threads: number; json?: boolean; target?: string }) => {
      const isHead = isHeadFolder(resolve(dir));
      if (isHead && options.target === undefined) throw new Error(`${dir} is an EAGLE-3 head: give the target it drafts for, --target TARGET_DIR`);
      if (!isHead && options.target !== undefined) throw new Error(`--target is for an EAGLE-3 head, and ${dir} is not one`);
      const r = isHead
        ? await headCheck(dir, options.target!, options.text, { top: options.top, threads: options.threads })
        : await modelCheck(dir, options.text, { top: options.top, threads: options.threads });
      if (r.note) process.stderr.write(`note: ${r.note}\n`);
      if (options.json) {
        process.stdout.write(`${JSON.stringify(r)}\n`);
        return;
      }
      const tokenizer = ModelTokenizer.load(resolve(options.target ?? dir));
      const out = [`tokens (${r.tokens.length}): ${r.tokens.join(' ')}`, ''];
      r.positions.forEach((p, i) => {
        const here = JSON.stringify(tokenizer.tokenText(r.tokens[i]));
        const preds = p.top.map((t) => `${t.id} ${JSON.stringify(t.token)} ${t.logit.toFixed(3)}`).join('  |  ');
        out.push(`${String(i).padStart(4)}  ${here.padEnd(14)} → ${preds}`);
      });
      process.stdout.write(`${out.join('\n')}\n`);
    });
}
