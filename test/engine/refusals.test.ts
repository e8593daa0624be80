// What a user asked that cannot be done as given is a Refusal (engine/refusal.ts): callers show its
// one-line message and keep no stack. One representative bad input per area, each checked to be a
// Refusal with the message it always had.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseModelConfig, readConfigJson } from '../../src/engine/model/config.js';
import { ModelLoadError } from '../../src/engine/model/errors.js';
import { checkPairMemory } from '../../src/engine/run/pair.js';
import { createPolicy } from '../../src/engine/policy/index.js';
import { Refusal } from '../../src/engine/refusal.js';
import { readReport } from '../../src/engine/reproduce/read-report.js';
import { writeTraceExport } from '../../src/output/trace/export-files.js';
import { describeModel } from '../../src/engine/trace/header.js';
import { parseTrace, TraceFormatError, type TraceContents } from '../../src/engine/trace/parse.js';
import { rescoreTrace } from '../../src/engine/trace/what-if.js';
import { writeFixtureModel } from './model/fixtures.js';
import { tempDir } from './model/helpers.js';
import { testHeader } from './trace/fixtures.js';

const tmp = tempDir('echo-refusals-');
afterAll(() => tmp.cleanup());

/** The error `run` throws (or rejects with); fails the test when it does not throw. */
async function thrown(run: () => unknown): Promise<Error> {
  try {
    await run();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a refusal, but nothing was thrown');
}

describe('model folders', () => {
  test('a bad config.json value is refused, naming the file and the key', async () => {
    const err = await thrown(() => parseModelConfig({ architectures: ['LlamaForCausalLM'], hidden_size: -1 }, '/m/config.json'));
    expect(err).toBeInstanceOf(ModelLoadError);
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toBe('/m/config.json: "hidden_size" must be a positive integer, got -1');
  });

  test('a config.json that cannot be read (a folder) is refused in one line, with the error code', async () => {
    const dir = join(tmp.path, 'config-is-a-folder');
    mkdirSync(join(dir, 'config.json'), { recursive: true });
    const err = await thrown(() => readConfigJson(dir));
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toBe(`${join(dir, 'config.json')}: cannot be read (EISDIR)`);
  });
});

describe('a pair that cannot fit this machine', () => {
  let draft: string;
  let target: string;
  beforeAll(() => {
    draft = writeFixtureModel(join(tmp.path, 'draft'), { seed: 1, hiddenSize: 32, numLayers: 1 }).dir;
    target = writeFixtureModel(join(tmp.path, 'target'), { seed: 2, hiddenSize: 32, numLayers: 1 }).dir;
  });

  test('is refused before loading when memoryBytes is too small', async () => {
    const err = await thrown(() => checkPairMemory({ slots: 2, maxLength: 64, memoryBytes: 1 << 20 }, { dir: target, precision: 'float32' }, { dir: draft, precision: 'int8' }));
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toMatch(/^2 KV slots of 64 rows: the pair needs about .*no precision fits/);
  });

  test('fits when the memory allows it', () => {
    expect(() => checkPairMemory({ slots: 2, maxLength: 64, memoryBytes: 2 ** 34 }, { dir: target, precision: 'float32' }, { dir: draft, precision: 'int8' })).not.toThrow();
  });
});

describe('traces', () => {
  test('a truncated header line is refused: nothing in the file is a trace', async () => {
    const line = JSON.stringify(testHeader());
    const err = await thrown(() => parseTrace(`${line.slice(0, line.length >> 1)}\n`));
    expect(err).toBeInstanceOf(TraceFormatError);
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toMatch(/^line 1/);
  });

  test('hashing a model folder that is missing or has no weights is refused', async () => {
    const missing = join(tmp.path, 'no-such-model');
    const gone = await thrown(() => describeModel(missing));
    expect(gone).toBeInstanceOf(Refusal);
    expect(gone.message).toBe(`model folder not found or unreadable: ${missing}`);
    const bare = join(tmp.path, 'config-only');
    mkdirSync(bare);
    writeFileSync(join(bare, 'config.json'), '{}');
    const unweighted = await thrown(() => describeModel(bare));
    expect(unweighted).toBeInstanceOf(Refusal);
    expect(unweighted.message).toBe(`model folder ${bare} has no weights (*.safetensors, *.onnx or pytorch_model*.bin)`);
  });

  test('a what-if over a sampled run, or one recorded without candidates, is refused', async () => {
    const header = testHeader();
    const sampled = { header: { ...header, config: { ...header.config, temperature: 0.7 } }, steps: [], knobs: [] } as unknown as TraceContents;
    const hot = await thrown(() => rescoreTrace(sampled));
    expect(hot).toBeInstanceOf(Refusal);
    expect(hot.message).toBe('what-if re-scoring needs a greedy run (temperature 0); this trace ran at temperature 0.7');
    const bare = { header: { ...header, config: { ...header.config, temperature: 0 }, recordCandidates: false }, steps: [], knobs: [] } as unknown as TraceContents;
    const err = await thrown(() => rescoreTrace(bare));
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toMatch(/recorded without candidate expansions/);
  });

  test('an export into a folder that does not exist is refused, and nothing is written', async () => {
    const out = join(tmp.path, 'no-such-folder', 'run.csv');
    const err = await thrown(() => writeTraceExport({ header: testHeader(), steps: [], knobs: [] } as unknown as TraceContents, 'csv', out));
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toBe(`cannot write ${out}: there is no folder ${join(tmp.path, 'no-such-folder')}`);
  });
});

describe('knobs and names', () => {
  test('a τ out of [0, 1] is refused by the policy that would gate with it', async () => {
    const err = await thrown(() => createPolicy('echo', { batch: 2, kmax: 16, taus: { '0': 1.5 } }));
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toBe('τ at depth 0 is 1.5; thresholds are probabilities in [0, 1]');
  });

  test('a ddd threshold that is no log-probability, and an unknown policy, are refused', async () => {
    const ddd = await thrown(() => createPolicy('ddd', { batch: 2, kmax: 16, dddThreshold: 0.5 }));
    expect(ddd).toBeInstanceOf(Refusal);
    expect(ddd.message).toBe('ddd threshold 0.5 must be a log-probability (≤ 0)');
    const unknown = await thrown(() => createPolicy('no-such-policy', { batch: 2, kmax: 16 }));
    expect(unknown).toBeInstanceOf(Refusal);
    expect(unknown.message).toMatch(/no-such-policy/);
  });

  test('a folder that holds no report is refused', async () => {
    const err = await thrown(() => readReport(tmp.path));
    expect(err).toBeInstanceOf(Refusal);
    expect(err.message).toBe(`${tmp.path} is not a report folder: it has no report.json (echo-studio reproduce writes one)`);
  });
});
