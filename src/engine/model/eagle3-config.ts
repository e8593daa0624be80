// An EAGLE-3 draft head's config.json → a checked description, and the target layers it reads.
// The head's decoder layers are Llama layers, so their fields parse as a Llama config does; what
// is EAGLE-3's own (draft vocabulary, target width, feature layers, fc bias) is read here.
import { parseModelConfig, readConfigJson, type ModelConfig } from './config.js';
import { ModelLoadError } from './errors.js';

export interface Eagle3Config {
  /** The head's decoder layers (architecture 'llama'); vocabSize is the target's vocabulary. */
  layers: ModelConfig;
  draftVocabSize: number;
  targetHiddenSize: number;
  /** Target layer ids whose outputs are the features, or null for the default rule. */
  auxLayerIds: number[] | null;
  /** fc carries a bias. */
  fcBias: boolean;
}

/** True when a config.json describes an EAGLE-3 head (an `architectures` entry naming Eagle3). */
export function isEagle3Config(json: Record<string, unknown>): boolean {
  const classes = Array.isArray(json.architectures) ? (json.architectures as unknown[]).map(String) : [];
  return classes.some((c) => /eagle3/i.test(c));
}

/** The config's architecture as a user reads it: its first `architectures` entry, else its model_type. */
export function headArchitecture(json: Record<string, unknown>): string {
  const classes = Array.isArray(json.architectures) ? (json.architectures as unknown[]).map(String) : [];
  return classes[0] ?? (typeof json.model_type === 'string' ? json.model_type : 'unknown architecture');
}

/**
 * The one-line problem of a folder given where an EAGLE-3 head is required: what it is, and what
 * fits there instead.
 */
export function notAHeadProblem(json: Record<string, unknown>): string {
  return `${headArchitecture(json)} is not an EAGLE-3 head (no architectures entry names Eagle3); a head folder (e.g. LlamaForCausalLMEagle3) fits here, and a language model goes as a draft model or the target`;
}

/** The one-line problem of an EAGLE-3 head given where a language model is required (a target, a model to run). */
export function headAsModelProblem(json: Record<string, unknown>): string {
  return `${headArchitecture(json)} is an EAGLE-3 head, not a language model: it drafts for a target and cannot run as one; a language model folder (a …ForCausalLM config) fits here, and the head goes as the draft`;
}

/** Refuses, in one line, an EAGLE-3 head folder given as `role` (e.g. "the target"), where a language model is required. */
export function refuseHeadAsModel(dir: string, role: string): void {
  const { path, json } = readConfigJson(dir);
  if (isEagle3Config(json)) throw new ModelLoadError(path, `${headAsModelProblem(json)} (given as ${role})`);
}

export function parseEagle3Config(json: Record<string, unknown>, path: string): Eagle3Config {
  const fail = (problem: string): never => {
    throw new ModelLoadError(path, problem);
  };
  // The layers are Llama layers whatever the head's class says.
  const layers = parseModelConfig({ ...json, architectures: ['LlamaForCausalLM'], model_type: 'llama' }, path);
  const positive = (key: string, fallback: number): number => {
    const v = json[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) return fail(`"${key}" must be a positive integer, got ${JSON.stringify(v)}`);
    return v;
  };
  const draftVocabSize = positive('draft_vocab_size', layers.vocabSize);
  if (draftVocabSize > layers.vocabSize) fail(`draft_vocab_size ${draftVocabSize} exceeds vocab_size ${layers.vocabSize}`);
  const targetHiddenSize = positive('target_hidden_size', layers.hiddenSize);
  let auxLayerIds: number[] | null = null;
  const eagle = json.eagle_config;
  if (eagle !== undefined && eagle !== null) {
    if (typeof eagle !== 'object' || Array.isArray(eagle)) fail('"eagle_config" must be an object');
    const ids = (eagle as Record<string, unknown>).eagle_aux_hidden_state_layer_ids;
    if (ids !== undefined && ids !== null) {
      if (!Array.isArray(ids) || ids.length !== 3 || ids.some((v) => typeof v !== 'number' || !Number.isInteger(v) || v < 0)) {
        fail(`eagle_config.eagle_aux_hidden_state_layer_ids must be three layer ids ≥ 0, got ${JSON.stringify(ids)}`);
      }
      auxLayerIds = ids as number[];
    }
  }
  return { layers, draftVocabSize, targetHiddenSize, auxLayerIds, fcBias: json.bias === true };
}

/**
 * The target's hidden-state boundaries the features are taken at: boundary b is the residual
 * stream entering layer b (b = L: after the last layer, before the final norm). Default: entering
 * layers 2, ⌊L/2⌋ and L − 3; named ids: the outputs of those layers (boundary id + 1).
 */
export function featureBoundaries(head: Eagle3Config, targetLayers: number, headPath: string): number[] {
  const fail = (problem: string): never => {
    throw new ModelLoadError(headPath, problem);
  };
  if (head.auxLayerIds !== null) {
    for (const id of head.auxLayerIds) {
      if (id >= targetLayers) fail(`eagle_aux_hidden_state_layer_ids names layer ${id}, but the target has ${targetLayers} layers (0 … ${targetLayers - 1})`);
    }
    return head.auxLayerIds.map((id) => id + 1);
  }
  const bounds = [2, Math.floor(targetLayers / 2), targetLayers - 3];
  if (new Set(bounds).size < 3 || bounds.some((b) => b < 0 || b > targetLayers)) {
    fail(
      `the target has ${targetLayers} layers, too few for EAGLE-3's default feature layers (2, ⌊L/2⌋, L−3 coincide); ` +
        'the head must name its layers in eagle_config.eagle_aux_hidden_state_layer_ids',
    );
  }
  return bounds;
}

/** Checks a head against its target; throws one line naming what does not match. */
export function checkHeadAgainstTarget(head: Eagle3Config, target: ModelConfig, headPath: string): void {
  const fail = (problem: string): never => {
    throw new ModelLoadError(headPath, problem);
  };
  if (head.targetHiddenSize !== target.hiddenSize) {
    fail(`the head reads features of width 3 × ${head.targetHiddenSize}, but the target's hidden size is ${target.hiddenSize}`);
  }
  if (head.layers.vocabSize !== target.vocabSize) {
    fail(`the head's vocab_size is ${head.layers.vocabSize}, the target's ${target.vocabSize}: a head must share its target's vocabulary`);
  }
}
