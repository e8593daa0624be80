// A greedy run of a fixture pair recorded as the engine records it for what-if re-scoring: the
// trace file with every step's candidate expansions, and the metrics the run saw live.
import path from 'node:path';
import { createPolicy } from '../../../src/engine/policy/index.js';
import type { SpeculationPolicy } from '../../../src/engine/policy/types.js';
import { Runner } from '../../../src/engine/run/runner.js';
import { ExpansionRecorder } from '../../../src/engine/trace/expansions.js';
import { buildTraceHeader } from '../../../src/engine/trace/header.js';
import type { TraceContents } from '../../../src/engine/trace/parse.js';
import { readTrace } from '../../../src/engine/trace/read.js';
import { TraceRecorder } from '../../../src/engine/trace/writer.js';
import type { RunConfig } from '../../../src/shared/config.js';
import type { RunMetrics, StepEvent } from '../../../src/shared/events.js';
import { randomPrompts, type FixturePair } from '../fixtures/pair.js';
import { tempDir } from './fixtures.js';

/** KV rows per slot: prompt + new tokens + the engine's tree headroom, with room to spare. */
export const KV_ROWS = 384;

/** A greedy Runner of `config` on `pair` over `config.requests` random prompts of `promptSeed`. */
export function greedyRunner(pair: FixturePair, config: RunConfig, policy: SpeculationPolicy, onStep: (e: StepEvent) => void, promptSeed: number): Runner {
  return new Runner(
    {
      target: pair.target,
      draft: pair.draft,
      policy,
      batch: config.batch,
      kmax: config.kmax,
      maxNewTokens: config.maxNewTokens,
      temperature: 0,
      seed: config.seed,
      eosTokenIds: pair.target.info.eosTokenIds,
      maxLength: KV_ROWS,
      onStep,
    },
    randomPrompts(config.requests, promptSeed),
  );
}

/** Runs `config` greedily on `pair` over seeded random prompts, recording the trace with its expansions. */
export async function recordRun(pair: FixturePair, config: RunConfig): Promise<{ trace: TraceContents; live: RunMetrics; file: string }> {
  const file = path.join(tempDir(), `${config.policy}.jsonl`);
  const header = await buildTraceHeader({ config, draftDir: pair.draftDir, targetDir: pair.targetDir, provider: 'cpu', writer: 'test', recordCandidates: true, targetEnds: pair.target.info.eosTokenIds });
  const recorder = new TraceRecorder(file, header);
  const expansions = new ExpansionRecorder();
  const runner = greedyRunner(pair, config, expansions.wrap(createPolicy(config.policy, { ...config })), (e) => recorder.step(expansions.annotate(e)), 7);
  const summary = await runner.run();
  const live = recorder.finish('finished', { wallMs: summary.wallMs });
  return { trace: await readTrace(file), live, file };
}
