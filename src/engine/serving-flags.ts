// Calibrated settings handed to serving engines, for when a pair outgrows one machine: the command
// line SGLang takes and the speculative config vLLM takes, for the pair as it is on disk, each
// with what that engine cannot express of the calibration. The mode follows the drafter: an
// EAGLE-3 head reads the target's hidden states (SGLang EAGLE3, vLLM eagle3); a separate small
// language model is SGLang's STANDALONE and vLLM's draft_model. Each line names the engine
// version its flags were checked against; the one flag only ECHO's own SGLang integration knows
// (its confidence threshold) is marked, with the upstream command beside it.
import type { TreeShape } from '../shared/config.js';
import { parseModelConfig, readConfigJson } from './model/config.js';
import { headTensor, isHeadFolder, openHeadFolder } from './model/head-loader.js';
import { assertSameVocabulary, ModelTokenizer } from './model/tokenizer.js';
import { HIGH_LOAD_SHAPE, LOW_LOAD_SHAPE } from './policy/budget.js';
import { Refusal } from './refusal.js';

/** What of a calibration profile the hand-off reads. */
export interface ServingProfile {
  /** τ_d at the sweet spots (depth → τ). */
  taus: Readonly<Record<string, number>>;
  /** τ_d at every calibrated depth (what dense gating would use). */
  denseTaus?: Readonly<Record<string, number>>;
  confidence: string;
}

/** The engine releases the emitted flags were checked against (their documented arguments). */
export const ENGINE_VERSIONS = {
  /** Server arguments of SGLang 0.5.4: EAGLE3 and STANDALONE, steps, top-k, draft tokens, token map. */
  sglang: 'SGLang 0.5.4',
  /** ECHO's SGLang integration: SGLang 0.5.4 plus --speculative-echo-threshold. */
  sglangEcho: 'SGLang 0.5.4 with ECHO',
  /** vLLM's speculative config for an EAGLE-3 head: method eagle3 (documented from 0.11.0 on). */
  vllmEagle3: 'vLLM 0.11.0',
  /**
   * vLLM's draft_model method: its V1 engine refused a separate draft model from 0.10 through
   * 0.13 and took one again later (vllm-project/vllm#24322); checked against 0.25.0's config.
   */
  vllmDraftModel: 'vLLM 0.25.0',
} as const;

/** The flag only ECHO's SGLang integration knows (upstream SGLang refuses it as unrecognised). */
export const ECHO_ONLY_SGLANG_FLAGS = ['--speculative-echo-threshold'] as const;

/** The pair a hand-off names, as read from its folders. */
export interface ServingPair {
  targetDir: string;
  draftDir: string;
  /** A separate small language model, or an EAGLE-3 head that reads the target's hidden states. */
  drafter: 'model' | 'eagle3-head';
  /** A head whose draft vocabulary is a subset of the target's: its size, and the tensor mapping it to target ids. */
  draftVocabulary?: { size: number; targetSize: number; map: 'd2t' };
}

/**
 * Reads what kind of drafter the draft folder holds and refuses, in one line, a pair no serving
 * engine can take as given: a draft model whose tokenizer differs from the target's (both engines
 * compare token ids across the two), or a head that does not fit the target.
 */
export function readServingPair(draftDir: string, targetDir: string): ServingPair {
  const target = readConfigJson(targetDir);
  const targetConfig = parseModelConfig(target.json, target.path);
  if (isHeadFolder(draftDir)) {
    let head;
    try {
      head = openHeadFolder(draftDir, targetConfig);
    } catch (err) {
      throw new Refusal(`no serving engine can take this pair: ${err instanceof Error ? err.message : String(err)}`);
    }
    const { draftVocabSize, layers } = head.config;
    if (draftVocabSize === layers.vocabSize) return { targetDir, draftDir, drafter: 'eagle3-head' };
    if (headTensor(head.weights, 'd2t') === undefined) {
      throw new Refusal(`no serving engine can take this pair: the head's draft vocabulary of ${draftVocabSize} ids has no d2t map to the target's ${layers.vocabSize}`);
    }
    return { targetDir, draftDir, drafter: 'eagle3-head', draftVocabulary: { size: draftVocabSize, targetSize: layers.vocabSize, map: 'd2t' } };
  }
  readConfigJson(draftDir);
  try {
    assertSameVocabulary(ModelTokenizer.load(draftDir), ModelTokenizer.load(targetDir));
  } catch (err) {
    throw new Refusal(`no serving engine can take this pair: ${err instanceof Error ? err.message : String(err)} (SGLang STANDALONE and vLLM draft_model compare token ids across the two)`);
  }
  return { targetDir, draftDir, drafter: 'model' };
}

export interface SglangCommand {
  /** The release the flags were checked against. */
  version: string;
  algorithm: 'EAGLE3' | 'STANDALONE';
  /** Arguments of `python -m sglang.launch_server`, flags and values in order. */
  args: string[];
}

export interface VllmCommand {
  version: string;
  /** Arguments of `vllm serve`: the target folder, then --speculative-config and its JSON. */
  args: string[];
  config: { method: 'eagle3' | 'draft_model'; model: string; num_speculative_tokens: number };
}

export interface ServingHandOff {
  /** Which load the base shape is for: batch 1, or a batch of many. */
  load: 'low' | 'high';
  shape: TreeShape;
  pair: ServingPair;
  /** The one threshold SGLang takes, and the rule that chose it from the τ_d. */
  threshold: { tau: number; depth: number; rule: string };
  sglang: {
    /** With ECHO's confidence threshold: needs ECHO's SGLang integration. */
    echo: SglangCommand;
    /** The same shape for upstream SGLang: no threshold. */
    upstream: SglangCommand;
    /** What the upstream command loses against ECHO's. */
    upstreamLoses: string;
  };
  vllm: VllmCommand;
  /** What each engine cannot express of the calibration. */
  notes: { sglang: string[]; vllm: string[] };
}

/**
 * The one τ SGLang's ECHO threshold takes: the smallest sweet-spot τ_d (ties: the shallowest
 * depth). Applied at every gate, a threshold above some τ_d would cut confidences the calibration
 * found worth verifying there; the smallest cuts nothing a per-depth gate would keep, and at its
 * own depth it is exact.
 */
export function singleThreshold(taus: Readonly<Record<string, number>>): { tau: number; depth: number } {
  const entries = Object.entries(taus).map(([d, tau]) => ({ depth: Number(d), tau }));
  if (entries.length === 0) throw new Error('the profile has no sweet spot: there is no threshold to hand on');
  return entries.reduce((best, e) => (e.tau < best.tau || (e.tau === best.tau && e.depth < best.depth) ? e : best));
}

export const THRESHOLD_RULE = 'the smallest sweet-spot τ_d: applied at every gate, it never cuts a confidence a per-depth gate would keep';

/**
 * The hand-off for one load: the paper's base shapes (batch 1: depth 8, top-k 10, 60 draft tokens;
 * many: 3 / 3 / 5), or a shape given. SGLang counts the verified root among its draft tokens, so
 * --speculative-num-draft-tokens is the shape's tokens + 1.
 */
export function servingHandOff(profile: ServingProfile, options: { load: 'low' | 'high'; pair: ServingPair; shape?: TreeShape }): ServingHandOff {
  const { pair } = options;
  const shape = options.shape ?? (options.load === 'low' ? LOW_LOAD_SHAPE : HIGH_LOAD_SHAPE);
  const threshold = { ...singleThreshold(profile.taus), rule: THRESHOLD_RULE };
  const perDepth = Object.entries(profile.taus)
    .map(([d, t]) => `d${d}:${t}`)
    .join(' ');
  const head = pair.drafter === 'eagle3-head';
  const algorithm = head ? 'EAGLE3' : 'STANDALONE';
  const upstreamArgs = [
    '--model-path',
    pair.targetDir,
    '--speculative-algorithm',
    algorithm,
    '--speculative-draft-model-path',
    pair.draftDir,
    '--speculative-eagle-topk',
    String(shape.topk),
    '--speculative-num-steps',
    String(shape.depth),
    '--speculative-num-draft-tokens',
    String(shape.tokens + 1),
  ];
  const vllmConfig = { method: head ? ('eagle3' as const) : ('draft_model' as const), model: pair.draftDir, num_speculative_tokens: shape.depth };
  const dense = profile.denseTaus ? Object.keys(profile.denseTaus).length : 0;
  return {
    load: options.load,
    shape,
    pair,
    threshold,
    sglang: {
      echo: { version: ENGINE_VERSIONS.sglangEcho, algorithm, args: [...upstreamArgs, ECHO_ONLY_SGLANG_FLAGS[0], String(threshold.tau)] },
      upstream: { version: ENGINE_VERSIONS.sglang, algorithm, args: upstreamArgs },
      upstreamLoses: 'the confidence gate: every request drafts and verifies the whole tree every step, however unsure the draft is (no truncation, no budget released to other requests)',
    },
    vllm: {
      version: head ? ENGINE_VERSIONS.vllmEagle3 : ENGINE_VERSIONS.vllmDraftModel,
      args: [pair.targetDir, '--speculative-config', JSON.stringify(vllmConfig)],
      config: vllmConfig,
    },
    notes: {
      sglang: [
        `one threshold for every gate: the per-depth τ_d (${perDepth}) collapse to ${threshold.tau}, the one at depth ${threshold.depth}`,
        `the gates sit where SGLang puts them, not only at the calibrated sweet spots (sparse gates: depths ${Object.keys(profile.taus).join(', ')})`,
        `the threshold is read in the engine's own confidence; these τ were calibrated on ${profile.confidence}`,
      ],
      vllm: [
        'no confidence gate at all: no τ_d, no sparse gates, no truncate-and-widen',
        `a fixed chain of ${shape.depth} draft tokens per request, no per-request tree nor a budget shared across the batch (K_max)`,
        ...(dense > 0 ? [`none of the ${dense} calibrated per-depth thresholds carries over`] : []),
      ],
    },
  };
}

/** An argument as a POSIX shell reads it back: bare when it is plain, else single-quoted. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

const commandLine = (program: string, args: readonly string[]): string => [program, ...args.map(shellWord)].join(' ');

function drafterLine(pair: ServingPair): string {
  if (pair.drafter === 'model') return `  draft: a separate small language model sharing the target's tokenizer (${pair.draftDir})`;
  const vocabulary = pair.draftVocabulary
    ? `; draft vocabulary ${pair.draftVocabulary.size} of the target's ${pair.draftVocabulary.targetSize} ids, mapped to target ids by the head's ${pair.draftVocabulary.map} tensor, which both engines read from its weights (no --speculative-token-map needed)`
    : '';
  return `  draft: an EAGLE-3 head reading the target's hidden states (${pair.draftDir})${vocabulary}`;
}

/** The hand-off as text: SGLang's command lines (ECHO's and upstream), vLLM's, and the notes. */
export function formatServingHandOff(h: ServingHandOff): string {
  const echoFlags = ECHO_ONLY_SGLANG_FLAGS.join(', ');
  return [
    `${h.load === 'low' ? 'low load (batch 1)' : 'high load (many requests)'}: depth ${h.shape.depth}, top-k ${h.shape.topk}, ${h.shape.tokens} draft tokens`,
    drafterLine(h.pair),
    `  SGLang with ECHO's integration (checked against ${h.sglang.echo.version}): ${commandLine('python -m sglang.launch_server', h.sglang.echo.args)}`,
    `    ${echoFlags}: only ECHO's SGLang integration has it; upstream SGLang refuses it`,
    `    threshold rule: ${h.threshold.rule}`,
    ...h.notes.sglang.map((n) => `    cannot express: ${n}`),
    `  upstream SGLang (checked against ${h.sglang.upstream.version}), the same without ${echoFlags}: ${commandLine('python -m sglang.launch_server', h.sglang.upstream.args)}`,
    `    loses: ${h.sglang.upstreamLoses}`,
    `  vLLM (checked against ${h.vllm.version}): ${commandLine('vllm serve', h.vllm.args)}`,
    ...h.notes.vllm.map((n) => `    cannot express: ${n}`),
  ].join('\n');
}
