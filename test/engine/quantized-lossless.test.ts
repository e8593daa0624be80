// Lossless on a quantised target (issue 42): with int8 and int4 target weights, every policy at
// batch 1, 8 and 32 emits exactly the tokens of ar at batch 1 on that same target, with no
// allowance for ties. It holds because a row's logits are the same bits however it reaches the
// target: decoded alone, packed beside other requests, or verified inside a tree whose drafted
// ancestors are new tokens rather than past (docs/model-runtime.md, "Batch invariance").
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadPair, type ModelPair } from '../../src/engine/run/pair.js';
import { availablePolicies, createPolicy } from '../../src/engine/policy/index.js';
import { Runner, slotRows, type RunSummary, type WorkItem } from '../../src/engine/run/runner.js';
import { readPromptsFile } from '../../src/engine/run/workload.js';
import { tempDir } from './model/helpers.js';

const MODELS = join('assets', 'models');
const DRAFT = join(MODELS, 'echo-demo-draft');
const TARGET = join(MODELS, 'echo-demo-target');
const installed = existsSync(join(DRAFT, 'config.json')) && existsSync(join(TARGET, 'config.json'));
if (!installed) console.warn(`demo pair not installed under ${MODELS}: skipping the quantised-target lossless test`);

const MAX_NEW = 8;
/** Verification budget per step: at least one node per request in flight. */
const kmaxAt = (batch: number): number => Math.max(24, batch);
const BATCHES = [1, 8, 32];

describe.skipIf(!installed).each(['int8', 'int4'] as const)('an %s demo target', (targetPrecision) => {
  const tmp = tempDir(`echo-quant-lossless-${targetPrecision}-`);
  let pair: ModelPair;
  let workload: WorkItem[];
  let reference: RunSummary;

  const run = (policy: string, batch: number): Promise<RunSummary> =>
    new Runner(
      {
        target: pair.target,
        draft: pair.draft,
        policy: createPolicy(policy, { batch, kmax: kmaxAt(batch) }),
        batch,
        kmax: kmaxAt(batch),
        maxNewTokens: MAX_NEW,
        temperature: 0,
        seed: 0,
        eosTokenIds: pair.target.info.eosTokenIds,
        maxLength: pair.maxLength,
      },
      workload,
    ).run();

  beforeAll(async () => {
    // 9 requests: batch 8 packs 8 then 1, batch 32 all of them at once.
    const records = (await Promise.all(['code', 'prose', 'math'].map((d) => readPromptsFile(join('assets', 'prompts', `${d}.jsonl`), { limit: 3 })))).flat();
    const cacheDir = join(tmp.path, 'cache');
    const probe = await loadPair(DRAFT, TARGET, { slots: 1, maxLength: 8, threads: 1, cacheDir, targetPrecision });
    workload = records.map((r) => ({ id: r.id, promptTokens: probe.tokenizer.encode(r.prompt!) }));
    await probe.release();
    const longest = Math.max(...workload.map((w) => w.promptTokens.length));
    pair = await loadPair(DRAFT, TARGET, { slots: Math.max(...BATCHES), maxLength: slotRows(longest, MAX_NEW, kmaxAt(Math.max(...BATCHES))), threads: 1, cacheDir, targetPrecision });
    reference = await run('ar', 1);
  });
  afterAll(async () => {
    await pair?.release();
    tmp.cleanup();
  });

  test.each(BATCHES)('every policy at batch %i emits exactly the tokens of ar at batch 1', async (batch) => {
    const want = reference.results.map((r) => `${r.id}: ${r.tokens.join(' ')}`);
    for (const policy of availablePolicies()) {
      const got = (await run(policy, batch)).results.map((r) => `${r.id}: ${r.tokens.join(' ')}`);
      expect(got, `${policy} at batch ${batch}`).toEqual(want);
    }
  });
});
