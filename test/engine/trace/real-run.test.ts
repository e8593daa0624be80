// A real run on the tiny random pair, through the trace: every step the engine emits must pass
// the schema, and the file alone must give the live run's numbers, also via Parquet.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { createPolicy } from '../../../src/engine/policy/index.js';
import { computeRunMetrics } from '../../../src/engine/metrics/run-metrics.js';
import { exportParquet } from '../../../src/output/trace/export-parquet.js';
import { buildTraceHeader } from '../../../src/engine/trace/header.js';
import { readTrace } from '../../../src/engine/trace/read.js';
import { TraceRecorder } from '../../../src/engine/trace/writer.js';
import type { RunConfig } from '../../../src/shared/config.js';
import type { RunMetrics, StepEvent } from '../../../src/shared/events.js';
import { loadFixturePair, type FixturePair } from '../fixtures/pair.js';
import { tempDir } from './fixtures.js';
import { greedyRunner, KV_ROWS } from './recorded-run.js';

describe('trace of a real run', () => {
  let pair: FixturePair;
  const events: StepEvent[] = [];
  let live: RunMetrics;
  let file: string;
  const config: RunConfig = {
    // A tree policy (the engine's registry decides which exist; eagle2 drafts real trees).
    policy: 'eagle2',
    batch: 4,
    kmax: 16,
    requests: 6,
    maxNewTokens: 16,
    temperature: 0,
    seed: 1,
  };

  beforeAll(async () => {
    pair = await loadFixturePair({ draft: 'perturbed', slots: config.batch, maxLength: KV_ROWS });
    file = path.join(tempDir(), 'real.jsonl');
    const header = await buildTraceHeader({ config, draftDir: pair.draftDir, targetDir: pair.targetDir, provider: 'cpu', writer: 'echo-studio test' });
    const recorder = new TraceRecorder(file, header);
    const runner = greedyRunner(
      pair,
      config,
      createPolicy(config.policy, { ...config }),
      (e) => {
        events.push(structuredClone(e));
        recorder.step(e);
      },
      3,
    );
    const summary = await runner.run();
    live = recorder.finish('finished', { wallMs: summary.wallMs });
  });
  afterAll(async () => pair?.release());

  it('reads back every step unchanged and the same metrics', async () => {
    const trace = await readTrace(file);
    expect(trace.error).toBeUndefined();
    expect(trace.steps).toEqual(events);
    expect(trace.summary?.metrics).toEqual(live);
    expect(computeRunMetrics(trace.steps, { policy: config.policy, wallMs: live.wallMs }).metrics).toEqual(live);
    expect(live.requests).toBe(config.requests);
    expect(live.generatedTokens).toBe(events.reduce((n, e) => n + e.requests.reduce((m, r) => m + r.emitted.length, 0), 0));
    expect(trace.header.models.target.files.map((f) => f.name)).toContain('config.json');
  });

  it('exports to Parquet with the same per-step numbers', async () => {
    const trace = await readTrace(file);
    const [stepsFile, requestsFile] = exportParquet(trace, path.join(tempDir(), 'real'));
    const steps = await parquetReadObjects({ file: await asyncBufferFromFile(stepsFile) });
    const requests = await parquetReadObjects({ file: await asyncBufferFromFile(requestsFile) });
    expect(steps.map((s) => s.verified_tokens)).toEqual(events.map((e) => e.verifiedTokens));
    const accepted = requests.reduce((n, r) => n + (r.accepted_length as number), 0);
    expect(accepted / requests.length).toBeCloseTo(live.meanAcceptedTokens, 12);
  });
});
