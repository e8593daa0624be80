// Value-model bench (a script, not a test): does a node's rank and its own draft confidence
// predict whether the target takes it (given it took the parent) better than the scheduler's
// earlier value model? Per domain: calibrate on the domain's last prompts (the warm-up's samples
// start the estimators), then run `echo` (h100:70b budget and price) over the first prompts at the
// given batch sizes, and score every verified node whose parent was accepted, predicted before it
// is learnt from (prequential), by:
//   layer-ratio  the earlier model: the top candidate continues with the layer's measured
//                continuation acceptance(d, best)/acceptance(d − 1, best above), a runner-up takes
//                (1 − top)·0.65·0.35^(r − 1);
//   rank+q       ChildAcceptance (src/engine/calibrate/child-acceptance.ts);
//   rank+q+depth the same with one estimator per depth group (0, 1–2, 3+): does depth add anything?
// Prints log-loss, Brier score and AUC of each over the same samples. Deterministic (greedy).
//
//   npx esbuild bench/value-model.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/value-model.mjs && node node_modules/.cache/bench/value-model.mjs \
//     [--domains code,prose,math] [--batches 1,8,32] [--requests 32] [--max-new-tokens 32]
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { greedyRunner } from './pair-bench.js';
import { acceptanceAt, type AcceptanceTable } from '../src/engine/calibrate/acceptance.js';
import { ChildAcceptance, stepConfidence } from '../src/engine/calibrate/child-acceptance.js';
import { profileGates } from '../src/engine/calibrate/profile.js';
import { calibrateSignals } from '../src/engine/run/warmup.js';
import { clockFromSpec } from '../src/engine/cost/clock.js';
import { suggestKmax } from '../src/engine/cost/knee.js';
import { loadPair } from '../src/engine/run/pair.js';
import { EchoPolicy } from '../src/engine/policy/echo.js';
import { RUNNER_UP_DECAY } from '../src/engine/policy/echo-scheduler.js';
import type { SpeculationPolicy, StepContext } from '../src/engine/policy/types.js';
import { slotRows } from '../src/engine/run/runner.js';
import { encodePrompt, readPromptsFile } from '../src/engine/run/workload.js';
import { nodeScore } from '../src/engine/draft/confidence.js';

const { values: args } = parseArgs({
  options: {
    domains: { type: 'string', default: 'code,prose,math' },
    batches: { type: 'string', default: '1,8,32' },
    requests: { type: 'string', default: '32' },
    'max-new-tokens': { type: 'string', default: '32' },
    hw: { type: 'string', default: 'h100:70b' },
  },
});
const domains = args.domains!.split(',');
const batches = args.batches!.split(',').map(Number);
const requests = Number(args.requests);
const maxNewTokens = Number(args['max-new-tokens']);
const draftDir = 'assets/models/echo-demo-draft';
const targetDir = 'assets/models/echo-demo-target';

interface Sample {
  label: number;
  old: number;
  rankQ: number;
  rankQDepth: number;
}

function scores(samples: readonly Sample[], pick: (s: Sample) => number): { logLoss: number; brier: number; auc: number } {
  let logLoss = 0;
  let brier = 0;
  for (const s of samples) {
    const p = Math.min(1 - 1e-6, Math.max(1e-6, pick(s)));
    logLoss -= s.label ? Math.log(p) : Math.log(1 - p);
    brier += (p - s.label) ** 2;
  }
  // AUC by ranks (ties get half).
  const sorted = samples.map((s) => ({ p: pick(s), y: s.label })).sort((a, b) => a.p - b.p);
  let rankSum = 0;
  let positives = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j < sorted.length && sorted[j].p === sorted[i].p) j++;
    const mid = (i + j + 1) / 2;
    for (let k = i; k < j; k++) if (sorted[k].y) {
      rankSum += mid;
      positives++;
    }
    i = j;
  }
  const negatives = sorted.length - positives;
  const auc = (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
  return { logLoss: logLoss / samples.length, brier: brier / samples.length, auc };
}

/** The policy, with every verified node whose parent was accepted scored by each model before the models learn from it. */
function scoring(inner: EchoPolicy, table: AcceptanceTable, rankQ: ChildAcceptance, byDepth: ChildAcceptance[], out: Sample[]): SpeculationPolicy {
  const group = (depth: number) => (depth === 0 ? 0 : depth <= 2 ? 1 : 2);
  return {
    name: inner.name,
    candidatesPerNode: inner.candidatesPerNode,
    confidence: inner.confidence,
    begin: (ctx) => inner.begin(ctx),
    frontier: (d, ctx) => inner.frontier(d, ctx),
    grow: (d, ctx) => inner.grow(d, ctx),
    select: (ctx) => inner.select(ctx),
    afterVerify(ctx: StepContext, accepted: ReadonlyArray<readonly number[]>) {
      for (const r of ctx.requests) {
        const tree = r.tree;
        const taken = new Set([0, ...(accepted[r.index] ?? [])]);
        const best = tree.layers.map((ids) => Math.max(...ids.map((id) => nodeScore(tree, id, inner.confidence))));
        for (let id = 1; id < tree.size; id++) {
          if (!tree.verified[id] || !taken.has(tree.parent[id])) continue;
          const depth = tree.depth[id];
          const rank = tree.rank[id];
          const cands = tree.candidates[tree.parent[id]]!;
          const here = acceptanceAt(table, depth, Math.exp(best[depth]));
          const above = depth === 0 ? 1 : acceptanceAt(table, depth - 1, Math.exp(best[depth - 1]));
          const top = Math.min(1, here / Math.max(above, 1e-9));
          const old = rank === 0 ? top : (1 - top) * (1 - RUNNER_UP_DECAY) * RUNNER_UP_DECAY ** (rank - 1);
          const q = stepConfidence(cands.logq, rank, inner.confidence);
          out.push({ label: taken.has(id) ? 1 : 0, old, rankQ: rankQ.estimate(rank, q), rankQDepth: byDepth[group(depth)].estimate(rank, q) });
        }
        rankQ.observe(tree, accepted[r.index] ?? []);
        for (let g = 0; g < byDepth.length; g++) {
          // Each depth group's estimator learns from its own depths only.
          const only = (id: number) => group(tree.depth[id]) === g;
          for (let id = 1; id < tree.size; id++) {
            if (!tree.verified[id] || !taken.has(tree.parent[id]) || !only(id)) continue;
            const cands = tree.candidates[tree.parent[id]]!;
            byDepth[g].record(tree.rank[id], stepConfidence(cands.logq, tree.rank[id], inner.confidence), taken.has(id));
          }
        }
      }
      inner.afterVerify(ctx, accepted);
    },
  };
}

const probe = await loadPair(draftDir, targetDir, { slots: 1, maxLength: 8, threads: 1 });
const tokenized: Record<string, { id: string; promptTokens: number[] }[]> = {};
for (const d of domains) {
  const rows = await readPromptsFile(join('assets', 'prompts', `${d}.jsonl`));
  tokenized[d] = rows.map((r) => ({ id: r.id, promptTokens: encodePrompt(r, probe.tokenizer) }));
}
await probe.release();
const clock = clockFromSpec(args.hw!);
const costs = clock.costs!;
const longest = Math.max(...Object.values(tokenized).flat().map((w) => w.promptTokens.length));
const maxBatch = Math.max(...batches, 8);
const maxLength = slotRows(longest, Math.max(maxNewTokens, 32), Math.max(1024, 8 * maxBatch));
const pair = await loadPair(draftDir, targetDir, { slots: maxBatch, maxLength, threads: 1 });
console.log(`value model: ${clock.label}; ${requests} requests × ${maxNewTokens} tokens; log-loss / Brier / AUC over verified nodes whose parent was accepted`);
for (const domain of domains) {
  const calibrationSet = tokenized[domain].slice(-24).map((w, i) => ({ id: `cal-${i}`, promptTokens: w.promptTokens }));
  const calibrations = await calibrateSignals({
    target: pair.target,
    draft: pair.draft,
    workload: calibrationSet,
    eosTokenIds: pair.target.info.eosTokenIds,
    maxLength,
    depth: 8,
    batch: 8,
    maxNewTokens: 32,
    models: { draft: draftDir, target: targetDir },
    domain,
    signals: ['path-prob'],
  });
  const profile = calibrations.profile(calibrations.pick('path-prob'));
  const gates = profileGates(profile);
  for (const batch of batches) {
    const kmax = suggestKmax({ kmax: costs.knee }, batch);
    const pool = tokenized[domain].slice(0, Math.max(1, tokenized[domain].length - 24));
    const workload = Array.from({ length: requests }, (_, i) => ({ id: `${domain}-${i}`, promptTokens: pool[i % pool.length].promptTokens }));
    const policy = new EchoPolicy({ batch, kmax, ...gates, draftCost: costs.draftForward, verifyCost: { knee: costs.knee, gamma: costs.gamma, draftRow: costs.draftRow } });
    const samples: Sample[] = [];
    const byDepth = [0, 1, 2].map(() => new ChildAcceptance('path-prob', gates.childAcceptance));
    const wrapped = scoring(policy, gates.acceptance!, new ChildAcceptance('path-prob', gates.childAcceptance), byDepth, samples);
    await greedyRunner(pair, wrapped, { batch, kmax, maxNewTokens }, workload, () => {}).run();
    const rate = samples.reduce((a, s) => a + s.label, 0) / samples.length;
    const line = (name: string, pick: (s: Sample) => number) => {
      const s = scores(samples, pick);
      return `${name} ${s.logLoss.toFixed(4)} / ${s.brier.toFixed(4)} / ${s.auc.toFixed(3)}`;
    };
    console.log(
      `${domain} batch ${batch} (K_max ${kmax}): ${samples.length} samples, ${(rate * 100).toFixed(1)} % accepted; ${line('layer-ratio', (s) => s.old)}; ${line('rank+q', (s) => s.rankQ)}; ${line('rank+q+depth', (s) => s.rankQDepth)}`,
    );
  }
}
await pair.release();
