// `echo-studio run` through commander on a tiny random pair: the summary, the outputs file, the
// trace, and each bad input as one clear error.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { executeRun, register } from '../../../src/cli/commands/run.js';
import { ignoredFlagNotes, runConfigFromFlags } from '../../../src/cli/run-config.js';
import { defaultKmax } from '../../../src/shared/knobs.js';
import { clockFromSpec } from '../../../src/engine/cost/clock.js';
import { suggestKmax } from '../../../src/engine/cost/knee.js';
import { rescoreTrace } from '../../../src/engine/trace/what-if.js';
import { atBaselineStepCost } from '../../../src/shared/step-costs.js';
import { readTrace } from '../../../src/engine/trace/read.js';
import { formatSummary, summariseTrace } from '../../../src/cli/commands/trace.js';
import { writeFixtureModel, writeSwappedVocabModel } from '../../engine/model/fixtures.js';
import { writePassThroughHead } from '../../engine/fixtures/head.js';
import { resolveModelDirs } from '../../../src/engine/run/session-run.js';
import { tinyPairFolders } from '../../engine/model/tiny-pair-folders.js';
import { runCli, saveRootGateProfile, type Histogram } from '../helpers.js';

const tmp = tinyPairFolders('echo-run-cli-');
const { targetDir, draftDir } = tmp;
let promptsFile: string;

beforeAll(() => {
  promptsFile = join(tmp.path, 'prompts.jsonl');
  writeFileSync(
    promptsFile,
    ['{"id":"a","prompt":"def add(x, y):"}', '', '{"id":"b","domain":"prose","prompt":"Once upon a time"}', '{"id":"c","prompt":"x = 1"}'].join('\n'),
  );
});

/** What the last run() wrote to stderr (its log lines). */
let lastStderr = '';

async function run(args: string[]): Promise<string> {
  const { stdout, stderr } = await runCli(register, ['run', ...args]).catch((err: unknown) => {
    lastStderr = '';
    throw err;
  });
  lastStderr = stderr;
  return stdout;
}

const pairFlags = () => ['--draft', draftDir, '--target', targetDir];

/** A profile file for the test pair gating only the root, at τ in the given signal. */
const writeGateProfile = (name: string, confidence: 'path-prob' | 'path-margin', tau: number, histogram?: Histogram): Promise<string> =>
  saveRootGateProfile(join(tmp.path, name), { draft: draftDir, target: targetDir }, confidence, tau, histogram);

describe('echo-studio run with an EAGLE-3 head', () => {
  it('takes a head folder as --draft, names the draft kind in the trace, and matches ar', async () => {
    const headTarget = join(tmp.path, 'head-target');
    const headDir = join(tmp.path, 'head');
    writePassThroughHead(headDir, writeFixtureModel(headTarget, { seed: 3, hiddenSize: 32 }));
    const trace = join(tmp.path, 'head-trace.jsonl');
    const common = ['--batch', '2', '--kmax', '12', '--prompts', promptsFile, '--requests', '3', '--max-new-tokens', '6', '--draft', headDir, '--target', headTarget];
    const outHead = join(tmp.path, 'head-out.jsonl');
    const outAr = join(tmp.path, 'head-ar-out.jsonl');
    await run(['--policy', 'static', ...common, '--json', '--trace', trace, '--out', outHead]);
    await run(['--policy', 'ar', ...common, '--json', '--out', outAr]);
    const header = JSON.parse(readFileSync(trace, 'utf8').split('\n')[0]);
    expect(header.models.draft.kind).toBe('eagle3-head');
    const tokens = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l).tokens);
    expect(tokens(outHead)).toEqual(tokens(outAr));
    // Told it is a model, a head folder is refused in one line; a model folder told it is a head too.
    await expect(run(['--policy', 'static', ...common, '--draft-kind', 'model'])).rejects.toThrow(/is an EAGLE-3 head, not a draft model/);
    await expect(run(['--policy', 'static', ...common.slice(0, -4), '--draft', draftDir, '--target', targetDir, '--draft-kind', 'head'])).rejects.toThrow(
      /LlamaForCausalLM is not an EAGLE-3 head .*a head folder \(e\.g\. LlamaForCausalLMEagle3\) fits here/,
    );
    // A head given as the target: what it is, and what fits there.
    await expect(run(['--policy', 'static', ...common.slice(0, -4), '--draft', draftDir, '--target', headDir])).rejects.toThrow(
      /LlamaForCausalLMEagle3 is an EAGLE-3 head, not a language model.*a language model folder .* fits here.*\(given as the target\)/,
    );
  });

  it('--draft-kind head picks the bundled head, and says so when it is missing', () => {
    const root = join(tmp.path, 'no-head-root');
    expect(() => resolveModelDirs({ draftKind: 'head' } as Parameters<typeof resolveModelDirs>[0], root)).toThrow(/bundled demo head is missing/);
  });
});

describe('echo-studio run', () => {
  it('renders conversation prompts with the target’s chat template, and says which prompt needs one', async () => {
    const CHAT = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ eos_token }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}";
    const chatTarget = join(tmp.path, 'chat-target');
    writeFixtureModel(chatTarget, { seed: 3, hiddenSize: 32, chatTemplate: CHAT });
    const chatPrompts = join(tmp.path, 'chat.jsonl');
    writeFileSync(chatPrompts, '{"id":"q","messages":[{"role":"user","content":"the cat"}]}\n');
    const out = join(tmp.path, 'chat-out.jsonl');
    const common = ['--policy', 'eagle2', '--batch', '1', '--kmax', '8', '--prompts', chatPrompts, '--requests', '1', '--max-new-tokens', '4', '--draft', draftDir];
    const summary = JSON.parse(await run([...common, '--target', chatTarget, '--out', out, '--json']));
    expect(summary.generatedTokens).toBeGreaterThan(0);
    const [line] = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(line.prompt).toBe('<|user|>the cat</s><|assistant|>');
    await expect(run([...common, '--target', targetDir])).rejects.toThrow(/prompt "q" is a conversation, but .*has no chat_template/);
  });

  it('prints one JSON summary, writes one output line per request and a trace', async () => {
    const out = join(tmp.path, 'out.jsonl');
    const trace = join(tmp.path, 'trace.jsonl');
    const stdout = await run([
      '--policy', 'eagle2', '--batch', '2', '--kmax', '12', '--prompts', promptsFile, '--requests', '5',
      '--max-new-tokens', '6', '--temperature', '0', '--seed', '1', ...pairFlags(), '--out', out, '--trace', trace, '--json', '--compare-ar',
    ]);
    const summary = JSON.parse(stdout);
    expect(summary.policy).toBe('eagle2');
    expect(summary.requests).toBe(5);
    expect(summary.generatedTokens).toBeGreaterThan(0);
    expect(summary.generatedTokens).toBeLessThanOrEqual(30);
    expect(summary.verifiedTokensPerStep).toBeLessThanOrEqual(12);
    expect(summary.speedupVsAr).toBeGreaterThan(0);
    // ar's steps on the same workload, and this run priced at ar's step cost.
    expect(summary.ar.steps).toBeGreaterThanOrEqual(summary.steps); // every request-step emits at least what ar's does
    expect(summary.ar.atArStepCost).toBeCloseTo(atBaselineStepCost(summary, summary.ar), 12);
    for (const key of ['throughput', 'meanAcceptedTokens', 'meanAcceptanceLength', 'draftUtilisation', 'tpotP50Ms', 'tpotP99Ms', 'paddingWaste']) {
      expect(typeof summary[key], key).toBe('number');
    }
    const lines = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    // Five requests from three prompts: the file is reused with suffixed ids.
    expect(lines.map((l) => l.id)).toEqual(['a', 'b', 'c', 'a#2', 'b#2']);
    expect(lines[0].prompt).toBe('def add(x, y):');
    for (const l of lines) {
      expect(l.tokens.length).toBeGreaterThan(0);
      expect(typeof l.text).toBe('string');
    }
    // Same prompt, greedy: the same tokens.
    expect(lines[3].tokens).toEqual(lines[0].tokens);
    const traceLines = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(traceLines[0].type).toBe('header');
    // On CPU the draft runs on its 8-bit head by default, and the trace says so; the target on float32 unless told.
    expect(traceLines[0].models.draft.precision).toBe('int8');
    expect(traceLines[0].models.target.precision).toBe('float32');
    expect(traceLines.at(-1).type).toBe('summary');
    expect(traceLines.at(-1).metrics.speedupVsAr).toBe(summary.speedupVsAr);
    expect(traceLines.filter((l) => l.type === 'step').length).toBe(summary.steps);
  });

  it('runs an ECHO policy with thresholds from the flags', async () => {
    const stdout = await run([
      '--policy', 'echo', '--taus', '0:0.2,2:0.3', '--batch', '2', '--kmax', '10', '--prompts', promptsFile,
      '--requests', '3', '--max-new-tokens', '5', ...pairFlags(), '--json',
    ]);
    const summary = JSON.parse(stdout);
    expect(summary.policy).toBe('echo');
    expect(summary.requests).toBe(3);
    expect(summary.verifiedTokensPerStep).toBeLessThanOrEqual(10);
  });

  it('gates with --confidence path-margin, records the signal in the trace, and refuses a profile of another signal', async () => {
    const trace = join(tmp.path, 'margin.trace.jsonl');
    await run([
      '--policy', 'echo', '--taus', '0:0.55', '--confidence', 'path-margin', '--batch', '2', '--kmax', '10', '--prompts', promptsFile,
      '--requests', '2', '--max-new-tokens', '4', ...pairFlags(), '--trace', trace, '--json',
    ]);
    const lines = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines[0].config.confidence).toBe('path-margin');
    const steps = lines.filter((l) => l.type === 'step');
    expect(steps.every((s) => s.confidence === 'path-margin')).toBe(true);
    // The root's best candidate always holds at least half of the top-two mass.
    const rootGates = steps.flatMap((s) => s.requests.flatMap((r: { gates: { depth: number; confidence: number }[] }) => r.gates)).filter((g) => g.depth === 0);
    expect(rootGates.length).toBeGreaterThan(0);
    for (const g of rootGates) expect(g.confidence).toBeGreaterThanOrEqual(0.5);

    const profile = await writeGateProfile('prob-profile.json', 'path-prob', 0.2);
    const flags = ['--policy', 'echo', '--prompts', promptsFile, '--requests', '1', '--max-new-tokens', '2', ...pairFlags(), '--profile', profile];
    await expect(run([...flags, '--confidence', 'path-margin'])).rejects.toThrow(/holds τ_d for the path-prob signal.*recalibrate with --confidence path-margin/);
    await expect(run([...flags, '--confidence', 'path-sharp'])).rejects.toThrow(/--confidence takes path-prob or path-margin/);
  });

  it('prices verified tokens with --verify-cost: at a prohibitive cost echo verifies only the roots', async () => {
    const args = ['--policy', 'echo', '--taus', '0:0.01', '--batch', '2', '--kmax', '12', '--prompts', promptsFile, '--requests', '2', '--max-new-tokens', '5', ...pairFlags(), '--json'];
    const free = JSON.parse(await run([...args, '--verify-cost', '64:0.5']));
    const priced = JSON.parse(await run([...args, '--verify-cost', '0:50']));
    expect(free.verifiedTokensPerStep).toBeGreaterThan(2);
    expect(priced.verifiedTokensPerStep).toBeLessThanOrEqual(2);
    expect(priced.meanAcceptedTokens).toBe(0);
    await expect(run([...args, '--verify-cost', '15'])).rejects.toThrow(/--verify-cost takes KNEE:GAMMA/);
    await expect(run([...args, '--verify-cost', '15:0.06:-1'])).rejects.toThrow(/--verify-cost takes KNEE:GAMMA/);
    expect(JSON.parse(await run([...args, '--verify-cost', '64:0.5:0.01'])).verifiedTokensPerStep).toBeGreaterThan(2);
  });

  it("prices draft forwards with --draft-cost against the profile's measured acceptance: layers that rarely repay are not drafted", async () => {
    // The profile says a root layer is accepted 1 time in 21 at any confidence.
    const profile = await writeGateProfile('rarely-profile.json', 'path-prob', 0.0001, { edges: [0, 0.5, 1], accepted: [1, 0], rejected: [20, 0] });
    const trace = (name: string) => join(tmp.path, name);
    const args = ['--policy', 'echo', '--profile', profile, '--batch', '2', '--kmax', '16', '--prompts', promptsFile, '--requests', '2', '--max-new-tokens', '5', ...pairFlags()];
    await run([...args, '--draft-cost', '0', '--trace', trace('free.jsonl'), '--record-candidates']);
    await run([...args, '--draft-cost', '0.5', '--trace', trace('priced.jsonl')]);
    await run([...args, '--trace', trace('default.jsonl'), '--record-candidates']);
    const deepest = async (file: string) => Math.max(...(await readTrace(trace(file))).steps.flatMap((s) => s.requests.flatMap((r) => r.nodes.map((n) => n.depth))));
    expect(await deepest('free.jsonl')).toBeGreaterThan(0);
    // Not even the root layer repays a forward of half a target's: those steps decode as ar.
    expect(await deepest('priced.jsonl')).toBe(-1);
    const priced = await readTrace(trace('priced.jsonl'));
    expect(priced.header.config.draftCost).toBe(0.5);
    expect(priced.steps.flatMap((s) => s.requests.map((r) => r.stop?.reason))).toContain('not-worth-its-cost');
    // The header records the price the run used (the default here), and a what-if re-score of
    // the run prices layers alike; one of the unpriced run under a prohibitive price drafts only roots.
    const recorded = await readTrace(trace('default.jsonl'));
    expect(recorded.header.config.draftCost).toBe(0.05);
    expect(rescoreTrace(recorded, {}).steps.map((s) => s.verifiedTokens)).toEqual(recorded.steps.map((s) => s.verifiedTokens));
    const free = await readTrace(trace('free.jsonl'));
    const repriced = rescoreTrace(free, { draftCost: 0.5 });
    expect(repriced.undecidedRequestSteps).toBe(0);
    expect(Math.max(...repriced.steps.map((s) => s.verifiedTokens ?? 0))).toBeLessThan(Math.max(...free.steps.map((s) => s.verifiedTokens)));
    // The run says the price is on, and at what cost; with --draft-cost 0 it says nothing.
    const said = async (draftCost?: number, policy = 'echo') => {
      const lines: string[] = [];
      const config = runConfigFromFlags({
        policy, profile, batch: 2, kmax: 16, prompts: promptsFile, requests: 1, maxNewTokens: 2, temperature: 0, seed: 0, draft: draftDir, target: targetDir, draftCost,
      });
      await executeRun(config, { log: (line) => lines.push(line) });
      return lines.filter((l) => /repays a draft forward/.test(l));
    };
    expect(await said()).toEqual(['echo: drafts a layer only when its measured chance of acceptance repays a draft forward, priced at 0.05 of a target forward (--draft-cost; 0 turns this off)']);
    expect(await said(0)).toEqual([]);
    // Policies that never price a layer never say so, whatever price they carry.
    for (const policy of ['ar', 'static']) expect(await said(0.05, policy)).toEqual([]);
    // auto: the price is what a draft forward costs here against a target forward, measured after
    // loading, said, and recorded as the number the run used.
    await run([...args, '--draft-cost', 'auto', '--trace', trace('auto.jsonl')]);
    const measured = (await readTrace(trace('auto.jsonl'))).header.config.draftCost!;
    expect(measured).toBeGreaterThan(0);
    expect(measured).toBeLessThan(10);
    expect(lastStderr).toContain(`echo: measured a draft forward at ${measured} of a target forward`);
    expect(lastStderr).toContain(`priced at ${measured} of a target forward`);
    // On a modelled clock the device prices the run: its knee is K_max (batch 2 is below the laptop
    // CPU's knee of 7) and its draft forward over its target forward the draft price, `auto` too;
    // an explicit --draft-cost or --kmax wins.
    const onDevice = ['--policy', 'echo', '--profile', profile, '--batch', '2', '--prompts', promptsFile, '--requests', '2', '--max-new-tokens', '3', ...pairFlags(), '--clock', 'modelled', '--hw', 'cpu-laptop'];
    const device = clockFromSpec('cpu-laptop').costs;
    for (const extra of [[], ['--draft-cost', 'auto']]) {
      await run([...onDevice, ...extra, '--trace', trace('device.jsonl'), '--force']);
      const header = (await readTrace(trace('device.jsonl'))).header.config;
      expect([header.kmax, header.draftCost]).toEqual([suggestKmax({ kmax: device.knee }, 2), device.draftForward]);
      expect(lastStderr).toContain(`priced at ${device.draftForward} of a target forward`);
    }
    await run([...onDevice, '--draft-cost', '0.3', '--kmax', '9', '--trace', trace('device.jsonl'), '--force']);
    expect([(await readTrace(trace('device.jsonl'))).header.config.kmax, (await readTrace(trace('device.jsonl'))).header.config.draftCost]).toEqual([9, 0.3]);
    // On the wall clock run's K_max stays its default.
    await run([...args.filter((a, i) => a !== '--kmax' && args[i - 1] !== '--kmax'), '--trace', trace('wall.jsonl')]);
    expect((await readTrace(trace('wall.jsonl'))).header.config.kmax).toBe(defaultKmax(2));
    const lines: string[] = [];
    const config = runConfigFromFlags({ policy: 'echo', profile, batch: 2, kmax: 16, prompts: promptsFile, requests: 1, maxNewTokens: 2, temperature: 0, seed: 0, draft: draftDir, target: targetDir });
    await executeRun(config, { measureDraftCost: true, log: (line) => lines.push(line) });
    expect(lines.some((l) => /^echo: measured a draft forward at [\d.e-]+ of a target forward \([\d.]+ ms against [\d.]+ ms\)/.test(l)), lines.join('\n')).toBe(true);
    await expect(run([...args, '--draft-cost', 'cheap'])).rejects.toThrow(/--draft-cost/);
    expect(ignoredFlagNotes({ batch: 1, kmax: 8, requests: 1, maxNewTokens: 2, temperature: 0, seed: 0, policy: 'static', draftCost: 0.1 })).toEqual([
      'note: --draft-cost has no effect on static (it applies to echo, dense, fixed)',
    ]);
  });

  it('reports a modelled clock next to wall time, larger for a bigger model on the same hardware', async () => {
    const modelled = async (hw: string) => {
      const summary = JSON.parse(
        await run([
          '--policy', 'static', '--batch', '2', '--kmax', '12', '--prompts', promptsFile, '--requests', '3',
          '--max-new-tokens', '5', ...pairFlags(), '--clock', 'modelled', '--hw', hw, '--json',
        ]),
      );
      expect(summary.modelled.clock).toMatch(/roofline/);
      expect(summary.modelled.ms).toBeCloseTo(summary.modelled.draftMs + summary.modelled.verifyMs, 6);
      expect(summary.modelled.throughput).toBeCloseTo(summary.generatedTokens / (summary.modelled.ms / 1000), 6);
      return summary.modelled.ms as number;
    };
    expect(await modelled('h100:70b')).toBeGreaterThan(await modelled('h100:8b'));
  });

  it('refuses a modelled clock without hardware, and hardware without the modelled clock', async () => {
    await expect(run(['--policy', 'ar', ...pairFlags(), '--clock', 'modelled'])).rejects.toThrow(/--clock modelled needs --hw/);
    await expect(run(['--policy', 'ar', ...pairFlags(), '--hw', 'h100'])).rejects.toThrow(/--hw needs --clock modelled/);
    await expect(run(['--policy', 'ar', ...pairFlags(), '--clock', 'modelled', '--hw', 'h100:9000b'])).rejects.toThrow(/9000b/);
  });

  it('falls back to CPU, saying why, when CUDA is asked for but its provider is not installed', async () => {
    const cudaInstalled = existsSync(join('node_modules', 'onnxruntime-node', 'bin', 'napi-v6', process.platform, process.arch, 'libonnxruntime_providers_cuda.so'));
    const lines: string[] = [];
    const config = runConfigFromFlags({
      policy: 'ar', batch: 1, kmax: 4, prompts: promptsFile, requests: 1, maxNewTokens: 2, temperature: 0, seed: 0, draft: draftDir, target: targetDir,
    });
    const report = await executeRun(config, { provider: 'cuda', log: (line) => lines.push(line) });
    expect(report.metrics.generatedTokens).toBe(2);
    if (!cudaInstalled) expect(lines.some((l) => /CUDA requested but .*; running on CPU/.test(l)), lines.join('\n')).toBe(true);
    await expect(run(['--policy', 'ar', ...pairFlags(), '--provider', 'tpu'])).rejects.toThrow(/--provider takes cpu or cuda/);
  });

  it('records candidates for what-if: re-scoring the run under its own settings reproduces it', async () => {
    const trace = join(tmp.path, 'candidates.jsonl');
    const summary = JSON.parse(
      await run([
        '--policy', 'eagle2', '--batch', '2', '--kmax', '12', '--prompts', promptsFile, '--requests', '3',
        '--max-new-tokens', '6', ...pairFlags(), '--trace', trace, '--record-candidates', '--json',
      ]),
    );
    const recorded = await readTrace(trace);
    expect(recorded.error).toBeUndefined();
    expect(recorded.header.recordCandidates).toBe(true);
    // Every request-step carries its expansions (empty only where nothing was drafted).
    for (const step of recorded.steps) {
      for (const r of step.requests) {
        expect(r.expansions, `step ${step.step} ${r.requestId}`).toBeDefined();
        if (r.nodes.length > 1) expect(r.expansions!.length, `step ${step.step} ${r.requestId}`).toBeGreaterThan(0);
      }
    }
    const same = rescoreTrace(recorded, {});
    expect(same.undecidedRequestSteps).toBe(0);
    expect(same.metrics.meanAcceptedTokens).toBeCloseTo(summary.meanAcceptedTokens, 9);
    expect(same.metrics.verifiedTokensPerStep).toBeCloseTo(summary.verifiedTokensPerStep, 9);
    await expect(run(['--policy', 'ar', ...pairFlags(), '--record-candidates'])).rejects.toThrow(/--record-candidates needs --trace/);
  });

  it("re-scores a run whose τ_d came from a profile with that profile's τ_d and signal", async () => {
    const profile = await writeGateProfile('margin-profile.json', 'path-margin', 0.505);
    const trace = join(tmp.path, 'profile-candidates.jsonl');
    await run([
      '--policy', 'echo', '--profile', profile, '--batch', '3', '--kmax', '9', '--prompts', promptsFile, '--requests', '3',
      '--max-new-tokens', '6', ...pairFlags(), '--trace', trace, '--record-candidates', '--json',
    ]);
    const recorded = await readTrace(trace);
    expect(recorded.header.config.taus).toBeUndefined();
    const gateChecks = recorded.steps.flatMap((s) => s.requests.flatMap((r) => r.gates));
    // τ 0.505 on a margin that is at least 0.5: this unrelated pair's near-ties fail it, others pass.
    expect(gateChecks.some((g) => g.pass) && gateChecks.some((g) => !g.pass)).toBe(true);
    const same = rescoreTrace(recorded, {});
    expect(same.undecidedRequestSteps).toBe(0);
    expect(same.steps.map((s) => s.verifiedTokens)).toEqual(recorded.steps.map((s) => s.verifiedTokens));
  });

  it('runs the draft on its float32 head with --draft-precision float32, and refuses other precisions', async () => {
    const trace = join(tmp.path, 'trace-f32.jsonl');
    await run(['--policy', 'chain', '--prompts', promptsFile, '--requests', '1', '--max-new-tokens', '3', ...pairFlags(), '--draft-precision', 'float32', '--trace', trace, '--json']);
    const header = JSON.parse(readFileSync(trace, 'utf8').split('\n')[0]);
    expect(header.models.draft.precision).toBe('float32');
    await expect(run(['--policy', 'chain', ...pairFlags(), '--draft-precision', 'fp16'])).rejects.toThrow(/--draft-precision takes float32, int8, int4, got "fp16"/);
  });

  it('runs a 4-bit target with --target-precision int4 and records both precisions in the summary, --json and the trace', async () => {
    const trace = join(tmp.path, 'trace-int4.jsonl');
    const common = ['--policy', 'chain', '--prompts', promptsFile, '--requests', '2', '--max-new-tokens', '4', ...pairFlags(), '--target-precision', 'int4'];
    const summary = JSON.parse(await run([...common, '--trace', trace, '--json']));
    expect(summary.precision).toEqual({ draft: 'int8', target: 'int4' });
    expect(summary.config.targetPrecision).toBe('int4');
    const header = JSON.parse(readFileSync(trace, 'utf8').split('\n')[0]);
    expect(header.models.target.precision).toBe('int4');
    expect(header.models.draft.precision).toBe('int8');
    expect(header.config.targetPrecision).toBe('int4');
    expect(formatSummary(await summariseTrace(trace))).toMatch(/target\s+int4 weights \(weight-only quantised\): lossless with respect to them, not to the float32 model/);
    const text = await run([...common, '--draft-precision', 'float32']);
    expect(text).toContain('weights: target int4, draft float32 · lossless with respect to the int4 target (its quantised weights, not the float32 model on disk)');
    await expect(run(['--policy', 'chain', ...pairFlags(), '--target-precision', 'int3'])).rejects.toThrow(/--target-precision takes float32, int8, int4, got "int3"/);
  });

  it('gives the draft attention sinks and a recent window with --draft-window: other drafts, the same output as ar, and the trace says so', async () => {
    const common = ['--batch', '2', '--kmax', '12', '--prompts', promptsFile, '--requests', '3', '--max-new-tokens', '8', ...pairFlags()];
    const drafted = async (window: string[], name: string) => {
      const out = join(tmp.path, `${name}.jsonl`);
      const trace = join(tmp.path, `${name}-trace.jsonl`);
      await run(['--policy', 'eagle2', ...common, ...window, '--out', out, '--trace', trace, '--json']);
      const lines = readFileSync(trace, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const draftTokens = lines.filter((l) => l.type === 'step').map((s) => s.requests.map((r: { nodes: { token: number }[] }) => r.nodes.map((n) => n.token)));
      return { header: lines[0], draftTokens, outputs: readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l).tokens) };
    };
    // One sink and the 2 rows before each drafted token: every prompt here is longer than that.
    const windowed = await drafted(['--draft-window', '1:2'], 'window');
    const whole = await drafted([], 'whole');
    expect(windowed.header.models.draft.window).toEqual({ sink: 1, recent: 2 });
    expect(windowed.header.config.draftWindow).toEqual({ sink: 1, recent: 2 });
    expect(whole.header.models.draft.window).toBeUndefined();
    expect(windowed.header.models.target.window).toBeUndefined();
    expect(windowed.draftTokens).not.toEqual(whole.draftTokens);
    const arOut = join(tmp.path, 'window-ar.jsonl');
    await run(['--policy', 'ar', ...common, '--out', arOut, '--json']);
    expect(windowed.outputs).toEqual(readFileSync(arOut, 'utf8').trim().split('\n').map((l) => JSON.parse(l).tokens));
    await expect(run(['--policy', 'chain', ...pairFlags(), '--draft-window', '64'])).rejects.toThrow(/--draft-window takes SINK:RECENT rows, e\.g\. 4:64/);
    await expect(run(['--policy', 'chain', ...pairFlags(), '--draft-window', '4:0'])).rejects.toThrow(/recent ≥ 1/);
  });

  it('refuses K_max below the batch size', async () => {
    await expect(run(['--policy', 'chain', '--batch', '4', '--kmax', '3', '--prompts', promptsFile, ...pairFlags()])).rejects.toThrow(
      'K_max (3) is below the batch size (4)',
    );
  });

  it("notes the policy flags the chosen policy does not read, and nothing for the ones it does", () => {
    const base = { batch: 1, kmax: 8, requests: 1, maxNewTokens: 2, temperature: 0, seed: 0 };
    expect(ignoredFlagNotes({ ...base, policy: 'static', taus: { '0': 0.2 }, confidence: 'path-margin', shape: { depth: 2, topk: 2, tokens: 3 } })).toEqual([
      'note: --taus has no effect on static (it applies to echo, dense, fixed)',
      'note: --confidence has no effect on static (it applies to echo, dense, fixed)',
    ]);
    expect(ignoredFlagNotes({ ...base, policy: 'fixed', taus: { '0': 0.2 }, tau: 0.3, confidence: 'path-prob', maxDepth: 6 })).toEqual([]);
    expect(ignoredFlagNotes({ ...base, policy: 'ar', draftWindow: { sink: 4, recent: 64 } })).toEqual([
      'note: --draft-window has no effect on ar (it applies to chain, static, eagle2, ddd, dense, fixed, echo)',
    ]);
    expect(ignoredFlagNotes({ ...base, policy: 'echo', tau: 0.3, chainLength: 3 })).toEqual([
      'note: --chain-length has no effect on echo (it applies to chain)',
      'note: --tau has no effect on echo (it applies to fixed)',
    ]);
  });

  it('refuses an unknown policy', async () => {
    await expect(run(['--policy', 'medusa', '--prompts', promptsFile, ...pairFlags()])).rejects.toThrow(/unknown policy "medusa" \(choose from ar, chain/);
  });

  it('names the bad line of a prompts file', async () => {
    const bad = join(tmp.path, 'bad.jsonl');
    writeFileSync(bad, '{"id":"a","prompt":"ok"}\n{"id":"b","text":"no prompt"}\n');
    await expect(run(['--policy', 'ar', '--prompts', bad, ...pairFlags()])).rejects.toThrow(`${bad} line 2: field "prompt"`);
    writeFileSync(bad, '{"id":"a","prompt":"ok"}\n\n{"id":"b", prompt}\n');
    await expect(run(['--policy', 'ar', '--prompts', bad, ...pairFlags()])).rejects.toThrow(`${bad} line 3: not valid JSON`);
  });

  it('refuses a draft whose vocabulary differs from the target', async () => {
    const otherDraft = join(tmp.path, 'other-draft');
    writeSwappedVocabModel(otherDraft, { seed: 4, hiddenSize: 32 });
    await expect(
      run(['--policy', 'chain', '--prompts', promptsFile, '--draft', otherDraft, '--target', targetDir]),
    ).rejects.toThrow(/draft and target vocabularies differ/);
  });

  it('refuses a flag value that is not a number', async () => {
    await expect(run(['--policy', 'ar', '--batch', 'two', '--prompts', promptsFile, ...pairFlags()])).rejects.toThrow(/--batch must be an integer/);
  });
});
