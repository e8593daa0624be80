// Lossless greedy on the bundled demo pair: a few short requests per domain, every drafting
// policy against ar, drafted by the small draft and by the bundled EAGLE-3 head. Skipped (with a
// message) when the pair is not installed.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPair, type ModelPair } from '../../src/engine/run/pair.js';
import { availablePolicies, createPolicy } from '../../src/engine/policy/index.js';
import { Runner, slotRows, type RunSummary, type WorkItem } from '../../src/engine/run/runner.js';
import { readPromptsFile } from '../../src/engine/run/workload.js';
import { expectSameAsAr } from './fixtures/lossless.js';
import { tempDir } from './model/helpers.js';

const MODELS = join('assets', 'models');
const DRAFT = join(MODELS, 'echo-demo-draft');
const HEAD = join(MODELS, 'echo-demo-head');
const TARGET = join(MODELS, 'echo-demo-target');
const installed = existsSync(join(DRAFT, 'config.json')) && existsSync(join(TARGET, 'config.json'));
if (!installed) console.warn(`demo pair not installed under ${MODELS}: skipping the demo-pair lossless test`);

const MAX_NEW = 24;
const BATCH = 4;
const KMAX = 24;

const drafters = [
  { name: 'the small draft', dir: DRAFT },
  ...(existsSync(join(HEAD, 'config.json')) ? [{ name: 'the EAGLE-3 head', dir: HEAD }] : []),
];

describe.skipIf(!installed).each(drafters)('lossless greedy on the demo pair, drafted by $name', ({ dir }) => {
  const tmp = tempDir('echo-demo-pair-');
  let pair: ModelPair;
  let workload: WorkItem[];
  let reference: RunSummary;

  const run = (policy: string) =>
    new Runner(
      {
        target: pair.target,
        draft: pair.draft,
        policy: createPolicy(policy, { batch: BATCH, kmax: KMAX }),
        batch: BATCH,
        kmax: KMAX,
        maxNewTokens: MAX_NEW,
        temperature: 0,
        seed: 0,
        eosTokenIds: pair.target.info.eosTokenIds,
        maxLength: pair.maxLength,
      },
      workload,
    ).run();

  beforeAll(async () => {
    const records = (await Promise.all(['code', 'prose', 'math'].map((d) => readPromptsFile(join('assets', 'prompts', `${d}.jsonl`), { limit: 3 })))).flat();
    const probe = await loadPair(DRAFT, TARGET, { slots: 1, maxLength: 8, threads: 1, cacheDir: join(tmp.path, 'cache') });
    workload = records.map((r) => ({ id: r.id, promptTokens: probe.tokenizer.encode(r.prompt!) }));
    await probe.release();
    const longest = Math.max(...workload.map((w) => w.promptTokens.length));
    pair = await loadPair(dir, TARGET, { slots: BATCH, maxLength: slotRows(longest, MAX_NEW, KMAX), threads: 1, cacheDir: join(tmp.path, 'cache') });
    reference = await run('ar');
  });
  afterAll(async () => {
    await pair?.release();
    tmp.cleanup();
  });

  it.each(availablePolicies().filter((p) => p !== 'ar'))('%s emits exactly the tokens of ar', async (policy) => {
    await expectSameAsAr(policy, await run(policy), reference, workload, pair.target);
  });
});
