// The hand-off to serving engines, per drafter kind, for the real pair: every flag it emits must be
// one the named engine version documents, the mode must follow the drafter, and a pair no engine
// can take is refused in one line.
import { cpSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findPackageRoot } from '../../src/engine/package-root.js';
import { Refusal } from '../../src/engine/refusal.js';
import { ECHO_ONLY_SGLANG_FLAGS, formatServingHandOff, readServingPair, servingHandOff, shellWord, singleThreshold, type ServingHandOff } from '../../src/engine/serving-flags.js';
import { writeFixtureModel, writeSwappedVocabModel } from './model/fixtures.js';

// SGLang 0.5.4's server arguments (python/sglang/srt/server_args.py, "Speculative decoding" and
// the model flags a launch needs), as documented for that release.
const SGLANG_0_5_4 = {
  flags: new Set([
    '--model-path',
    '--tokenizer-path',
    '--host',
    '--port',
    '--tp-size',
    '--dtype',
    '--trust-remote-code',
    '--context-length',
    '--mem-fraction-static',
    '--speculative-algorithm',
    '--speculative-draft-model-path',
    '--speculative-draft-model-revision',
    '--speculative-num-steps',
    '--speculative-eagle-topk',
    '--speculative-num-draft-tokens',
    '--speculative-accept-threshold-single',
    '--speculative-accept-threshold-acc',
    '--speculative-token-map',
    '--speculative-attention-mode',
  ]),
  algorithms: new Set(['EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM']),
};
// ECHO's own SGLang integration: upstream 0.5.4 plus its confidence threshold.
const SGLANG_0_5_4_ECHO = { flags: new Set([...SGLANG_0_5_4.flags, '--speculative-echo-threshold']), algorithms: SGLANG_0_5_4.algorithms };
const SGLANG: Record<string, typeof SGLANG_0_5_4> = { 'SGLang 0.5.4': SGLANG_0_5_4, 'SGLang 0.5.4 with ECHO': SGLANG_0_5_4_ECHO };

// vLLM's `vllm serve` flag for speculation and the SpeculativeConfig fields its JSON takes
// (vllm/config/speculative.py). 0.11.0's V1 engine refuses method draft_model (NotImplementedError);
// it runs again in later releases, here 0.25.0.
const VLLM_CONFIG_KEYS = ['method', 'model', 'num_speculative_tokens', 'draft_tensor_parallel_size', 'quantization', 'max_model_len', 'revision', 'code_revision', 'disable_by_batch_size', 'prompt_lookup_max', 'prompt_lookup_min', 'speculative_token_tree'];
const VLLM: Record<string, { flags: Set<string>; methods: Set<string>; keys: Set<string> }> = {
  'vLLM 0.11.0': { flags: new Set(['--speculative-config']), methods: new Set(['ngram', 'eagle', 'eagle3', 'medusa', 'mlp_speculator', 'deepseek_mtp', 'mtp']), keys: new Set(VLLM_CONFIG_KEYS) },
  'vLLM 0.25.0': { flags: new Set(['--speculative-config']), methods: new Set(['ngram', 'eagle', 'eagle3', 'medusa', 'mlp_speculator', 'draft_model', 'deepseek_mtp', 'mtp', 'suffix']), keys: new Set(VLLM_CONFIG_KEYS) },
};

const profile = { taus: { '0': 0.3, '7': 0.12, '3': 0.12 }, denseTaus: { '0': 0.3, '1': 0.2, '3': 0.12, '7': 0.12 }, confidence: 'path-prob' };
const models = path.join(findPackageRoot(import.meta.url), 'assets', 'models');
const target = path.join(models, 'echo-demo-target');

/** Every flag of an SGLang argument list (with its value) is in the named version's list. */
function expectSglangFlagsKnown(command: ServingHandOff['sglang']['echo']): void {
  const known = SGLANG[command.version];
  expect(known, `no argument list for ${command.version}`).toBeDefined();
  for (let i = 0; i < command.args.length; i += 2) {
    expect(known.flags, `${command.version} has no ${command.args[i]}`).toContain(command.args[i]);
    expect(command.args[i + 1], `${command.args[i]} needs a value`).toBeDefined();
  }
  const algorithm = command.args[command.args.indexOf('--speculative-algorithm') + 1];
  expect(known.algorithms).toContain(algorithm);
  expect(algorithm).toBe(command.algorithm);
}

function expectVllmKnown(h: ServingHandOff): void {
  const known = VLLM[h.vllm.version];
  expect(known, `no argument list for ${h.vllm.version}`).toBeDefined();
  const [model, ...flags] = h.vllm.args;
  expect(model).toBe(h.pair.targetDir);
  expect(known.flags).toContain(flags[0]);
  const config = JSON.parse(flags[1]) as Record<string, unknown>;
  expect(config).toEqual(h.vllm.config);
  for (const key of Object.keys(config)) expect(known.keys, `${h.vllm.version}'s speculative config has no ${key}`).toContain(key);
  expect(known.methods).toContain(config.method);
}

function expectShape(h: ServingHandOff, shape: { depth: number; topk: number; tokens: number }): void {
  const flag = (name: string) => h.sglang.upstream.args[h.sglang.upstream.args.indexOf(name) + 1];
  expect(flag('--speculative-num-steps')).toBe(String(shape.depth));
  expect(flag('--speculative-eagle-topk')).toBe(String(shape.topk));
  // SGLang counts the verified root among its draft tokens.
  expect(flag('--speculative-num-draft-tokens')).toBe(String(shape.tokens + 1));
  expect(h.vllm.config.num_speculative_tokens).toBe(shape.depth);
}

describe('hand-off to serving engines', () => {
  it('takes the smallest sweet-spot τ_d as the one threshold (the shallowest on a tie)', () => {
    expect(singleThreshold(profile.taus)).toEqual({ tau: 0.12, depth: 3 });
    expect(() => singleThreshold({})).toThrow(/no sweet spot/);
  });

  it('a separate draft model: SGLang STANDALONE and vLLM draft_model, on the real folders, every flag known to its version', () => {
    const draft = path.join(models, 'echo-demo-draft');
    const pair = readServingPair(draft, target);
    expect(pair).toEqual({ targetDir: target, draftDir: draft, drafter: 'model' });
    const low = servingHandOff(profile, { load: 'low', pair });
    expect(low.sglang.echo.args.slice(0, 6)).toEqual(['--model-path', target, '--speculative-algorithm', 'STANDALONE', '--speculative-draft-model-path', draft]);
    expect(low.vllm.config).toEqual({ method: 'draft_model', model: draft, num_speculative_tokens: 8 });
    expectShape(low, { depth: 8, topk: 10, tokens: 60 });
    const high = servingHandOff(profile, { load: 'high', pair });
    expectShape(high, { depth: 3, topk: 3, tokens: 5 });
    for (const h of [low, high]) {
      expectSglangFlagsKnown(h.sglang.echo);
      expectSglangFlagsKnown(h.sglang.upstream);
      expectVllmKnown(h);
      // Upstream SGLang gets the same shape without the flag only ECHO's integration has.
      expect(h.sglang.echo.args).toEqual([...h.sglang.upstream.args, '--speculative-echo-threshold', '0.12']);
      for (const flag of ECHO_ONLY_SGLANG_FLAGS) {
        expect(h.sglang.upstream.args).not.toContain(flag);
        expect(SGLANG_0_5_4.flags).not.toContain(flag);
      }
    }
    const text = formatServingHandOff(high);
    expect(text).toContain(`SGLang with ECHO's integration (checked against SGLang 0.5.4 with ECHO): python -m sglang.launch_server --model-path ${target} --speculative-algorithm STANDALONE`);
    expect(text).toMatch(/--speculative-echo-threshold: only ECHO's SGLang integration has it; upstream SGLang refuses it/);
    expect(text).toMatch(/upstream SGLang \(checked against SGLang 0\.5\.4\), the same without --speculative-echo-threshold: python -m sglang\.launch_server .*--speculative-num-draft-tokens 6\n/);
    expect(text).toMatch(/loses: the confidence gate/);
    expect(text).toContain(`vLLM (checked against vLLM 0.25.0): vllm serve ${target} --speculative-config '{"method":"draft_model","model":"${draft}","num_speculative_tokens":3}'`);
    expect(text).toMatch(/cannot express: one threshold for every gate: the per-depth τ_d \(d0:0\.3 d3:0\.12 d7:0\.12\)/);
    expect(text).toMatch(/cannot express: no confidence gate at all/);
    expect(text).not.toMatch(/EAGLE3|eagle3|TARGET/);
  });

  it('an EAGLE-3 head: SGLang EAGLE3 and vLLM eagle3, with its draft vocabulary mapping, every flag known to its version', () => {
    const head = path.join(models, 'echo-demo-head');
    const pair = readServingPair(head, target);
    expect(pair).toEqual({ targetDir: target, draftDir: head, drafter: 'eagle3-head', draftVocabulary: { size: 3072, targetSize: 4096, map: 'd2t' } });
    for (const load of ['low', 'high'] as const) {
      const h = servingHandOff(profile, { load, pair });
      expect(h.sglang.upstream.algorithm).toBe('EAGLE3');
      expect(h.vllm.config.method).toBe('eagle3');
      expect(h.vllm.version).toBe('vLLM 0.11.0');
      expectSglangFlagsKnown(h.sglang.echo);
      expectSglangFlagsKnown(h.sglang.upstream);
      expectVllmKnown(h);
    }
    const text = formatServingHandOff(servingHandOff(profile, { load: 'low', pair }));
    expect(text).toContain(`draft vocabulary 3072 of the target's 4096 ids, mapped to target ids by the head's d2t tensor`);
    expect(text).toContain(`--speculative-algorithm EAGLE3 --speculative-draft-model-path ${head}`);
    expect(text).not.toMatch(/STANDALONE|draft_model/);
  });

  it('refuses in one line a pair no engine can take: a draft whose tokenizer differs from the target', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'echo-serving-'));
    const fixtureTarget = path.join(root, 'target');
    const other = path.join(root, 'other-vocab');
    writeFixtureModel(fixtureTarget, { seed: 3, hiddenSize: 32 });
    writeSwappedVocabModel(other, { seed: 4, hiddenSize: 32 });
    let refusal: unknown;
    try {
      readServingPair(other, fixtureTarget);
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(Refusal);
    expect((refusal as Error).message).toMatch(/^no serving engine can take this pair: .*draft and target vocabularies differ.*SGLang STANDALONE and vLLM draft_model compare token ids/);
    expect((refusal as Error).message).not.toContain('\n');
    // A head that does not fit the target is refused the same way.
    const head = path.join(root, 'head');
    cpSync(path.join(models, 'echo-demo-head'), head, { recursive: true });
    expect(() => readServingPair(head, fixtureTarget)).toThrow(/^no serving engine can take this pair: /);
  });

  it('quotes a folder with spaces so the printed command pastes as one argument', () => {
    expect(shellWord('/models/my draft')).toBe(`'/models/my draft'`);
    expect(shellWord(`it's`)).toBe(`'it'\\''s'`);
    expect(shellWord('/models/echo-demo-target')).toBe('/models/echo-demo-target');
  });
});
