// Two drafters for one target side by side (a script, not a test): the small draft model and an
// EAGLE-3 head, each in a sweep of ar, chain, static and echo per domain and batch size, in one
// process on one machine. Per drafter: mean acceptance length (tokens per request-step, bonus
// included) and acceptance per depth, the depth-0 AUC of its confidence (its top depth-0 token's
// probability for telling steps where the target agrees with it from the others, read from
// `static`'s steps), drafting time per step, and speedup over `ar` on the wall clock and on a
// modelled clock. Ratios are taken within one sweep (same loaded target, interleaved runs).
//
//   npx esbuild bench/drafters.ts --bundle --platform=node --format=esm --packages=external \
//     --outfile=node_modules/.cache/bench/drafters.mjs && node node_modules/.cache/bench/drafters.mjs [options]
//
// Options [defaults]: --draft DIR [assets/models/echo-demo-draft] --head DIR[,DIR…] [assets/models/echo-demo-head;
// several heads are measured one after another in the same run, named head:FOLDER]
// --target DIR [assets/models/echo-demo-target] --domains [code,prose,math] --batches [1,8,32]
// --policies [ar,chain,static,echo] --requests N [16] --max-new-tokens N [32] --rounds N [1]
// --hw SPEC [h100: the modelled clock, as sweep --hw] --json FILE [also write every row as JSON]
// --drafters draft,head [which to run] --with FILE [rows of an earlier run's --json, shown beside
// this run's: a drafter measured at another time; acceptance is deterministic, wall ratios are each sweep's own].
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { clockFromSpec } from '../src/engine/cost/clock.js';
import { slotsForRounds } from '../src/engine/run/rounds.js';
import { loadRunSetup } from '../src/engine/run/session-run.js';
import { runSweep, type SweepRow } from '../src/engine/run/sweep.js';
import { RunConfigSchema } from '../src/shared/config.js';
import type { StepEvent } from '../src/shared/events.js';

const { values: args } = parseArgs({
  options: {
    draft: { type: 'string', default: 'assets/models/echo-demo-draft' },
    head: { type: 'string', default: 'assets/models/echo-demo-head' },
    target: { type: 'string', default: 'assets/models/echo-demo-target' },
    domains: { type: 'string', default: 'code,prose,math' },
    batches: { type: 'string', default: '1,8,32' },
    policies: { type: 'string', default: 'ar,chain,static,echo' },
    requests: { type: 'string', default: '16' },
    'max-new-tokens': { type: 'string', default: '32' },
    rounds: { type: 'string', default: '1' },
    hw: { type: 'string', default: 'h100' },
    json: { type: 'string' },
    drafters: { type: 'string', default: 'draft,head' },
    with: { type: 'string' },
  },
});

const domains = args.domains.split(',');
const batches = args.batches.split(',').map(Number);
const policies = args.policies.split(',');
if (!policies.includes('ar')) throw new Error('--policies must include ar: every speedup is over it');
const requests = Number(args.requests);
const maxNewTokens = Number(args['max-new-tokens']);
const rounds = Number(args.rounds);
const clock = clockFromSpec(args.hw);
const kmax = (batch: number) => Math.max(16, 8 * batch);
// Several heads (`--head A,B`) are told apart by their folders' names; one head is `head`.
const headDirs = args.head.split(',');
const headName = (dir: string) => (headDirs.length === 1 ? 'head' : `head:${basename(dir)}`);
if (new Set(headDirs.map(headName)).size !== headDirs.length) throw new Error(`--head folders must have different names: ${args.head}`);
const wanted = args.drafters.split(',');
const drafters = [
  ...(wanted.includes('draft') ? [{ name: 'draft', dir: args.draft, kind: 'model' as const }] : []),
  ...(wanted.includes('head') ? headDirs.map((dir) => ({ name: headName(dir), dir, kind: 'head' as const })) : []),
];

/** ROC AUC of `scores` for telling hits from misses; ties count half. */
function auc(samples: { score: number; hit: boolean }[]): number | null {
  const pos = samples.filter((s) => s.hit).length;
  const neg = samples.length - pos;
  if (pos === 0 || neg === 0) return null;
  const sorted = [...samples].sort((a, b) => a.score - b.score);
  let rankSum = 0;
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1].score === sorted[i].score) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) if (sorted[k].hit) rankSum += rank;
    i = j + 1;
  }
  return (rankSum - (pos * (pos + 1)) / 2) / (pos * neg);
}

/** Each request-step's top depth-0 draft token: its probability, and whether the target emitted it first. */
function depth0Samples(event: StepEvent, into: { score: number; hit: boolean }[]): void {
  for (const r of event.requests) {
    let best = -1;
    for (const n of r.nodes) if (n.depth === 0 && (best === -1 || n.logq > r.nodes[best].logq)) best = n.id;
    if (best === -1 || r.emitted.length === 0) continue;
    into.push({ score: Math.exp(r.nodes[best].logq), hit: r.emitted[0] === r.nodes[best].token });
  }
}

interface Row {
  domain: string;
  drafter: string;
  batch: number;
  kmax: number;
  policy: string;
  mal: number;
  acceptancePerDepth: number[];
  draftMsPerStep: number;
  verifyMsPerStep: number;
  throughput: number;
  wallVsAr: number;
  modelledVsAr: number | null;
  depth0Auc: number | null;
  sameTokensAsAr: boolean | null;
}

const rows: Row[] = [];
const earlier: Row[] = args.with ? (JSON.parse(readFileSync(args.with, 'utf8')) as { rows: Row[] }).rows : [];
const log = (line: string) => process.stderr.write(`${line}\n`);
const plan = { policies, batches, kmax, rounds, interleave: 'steps' as const };

for (const domain of domains) {
  for (const drafter of drafters) {
    const config = RunConfigSchema.parse({
      draftDir: drafter.dir,
      targetDir: args.target,
      draftKind: drafter.kind,
      domain,
      policy: policies.includes('echo') ? 'echo' : 'static',
      batch: Math.max(...batches),
      kmax: kmax(Math.max(...batches)),
      requests,
      maxNewTokens,
      temperature: 0,
      seed: 0,
    });
    const started = performance.now();
    const setup = await loadRunSetup(config, { slots: slotsForRounds(plan), log });
    const samples = new Map<number, { score: number; hit: boolean }[]>();
    let swept: SweepRow[];
    try {
      swept = await runSweep(setup, {
        ...plan,
        clock,
        log,
        onStep: (run, event) => {
          if (run.entry !== 'static') return;
          if (!samples.has(run.batch)) samples.set(run.batch, []);
          depth0Samples(event, samples.get(run.batch)!);
        },
      });
    } finally {
      await setup.release();
    }
    for (const r of swept) {
      const ar = swept.find((s) => s.batch === r.batch && s.policy === 'ar')!;
      const m = r.metrics;
      rows.push({
        domain,
        drafter: drafter.name,
        batch: r.batch,
        kmax: r.kmax,
        policy: r.policy,
        mal: m.meanAcceptanceLength,
        acceptancePerDepth: m.acceptancePerPosition,
        draftMsPerStep: m.stepTime?.draftMs ?? 0,
        verifyMsPerStep: m.stepTime?.verifyMs ?? 0,
        throughput: m.throughput,
        wallVsAr: m.throughput / ar.metrics.throughput,
        modelledVsAr: r.modelledThroughput !== undefined && ar.modelledThroughput !== undefined ? r.modelledThroughput / ar.modelledThroughput : null,
        depth0Auc: r.policy === 'static' ? auc(samples.get(r.batch) ?? []) : null,
        sameTokensAsAr: r.sameTokens,
      });
    }
    log(`${domain} ${drafter.name}: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
}

rows.push(...earlier);
rows.sort((a, b) => domains.indexOf(a.domain) - domains.indexOf(b.domain) || a.batch - b.batch || a.policy.localeCompare(b.policy) || a.drafter.localeCompare(b.drafter));
if (args.json) writeFileSync(args.json, JSON.stringify({ clock: clock.label, requests, maxNewTokens, rounds, rows }, null, 2));
const f = (x: number | null, d = 2) => (x === null ? '-' : x.toFixed(d));
const command = ['bench/drafters.ts', ...process.argv.slice(2)].join(' ');
const out: string[] = [`# Drafters side by side on one target`, '', `Generated by \`${command}\` (do not edit by hand).`, '', `modelled clock: ${clock.label}; ${requests} requests × ${maxNewTokens} new tokens per run, ${rounds} round(s), K_max max(16, 8 × batch)`, ''];
out.push('| domain | batch | policy | drafter | MAL | acceptance by depth 0,1,2,3 | depth-0 AUC | draft ms/step | verify ms/step | wall ÷ ar | modelled ÷ ar | same tokens as ar |');
out.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  if (r.policy === 'ar') continue;
  out.push(
    `| ${r.domain} | ${r.batch} | ${r.policy} | ${r.drafter} | ${f(r.mal)} | ${r.acceptancePerDepth.slice(0, 4).map((v) => f(v)).join(' ')} | ${f(r.depth0Auc, 3)} | ${f(r.draftMsPerStep)} | ${f(r.verifyMsPerStep)} | ${f(r.wallVsAr, 3)} | ${f(r.modelledVsAr, 3)} | ${r.sameTokensAsAr ?? '-'} |`,
  );
}
out.push(
  '',
  `| domain | head | head ÷ draft, static MAL at batch ${batches[0]} | head ÷ draft, static draft ms/step at batch ${batches[0]} | best policy ÷ ar at batch ${batches[0]}, wall: draft / head |`,
  '| --- | --- | --- | --- | --- |',
);
const headsShown = [...new Set(rows.map((r) => r.drafter).filter((d) => d.startsWith('head')))];
for (const domain of domains) {
  const at = (drafter: string, policy: string, batch: number) => rows.find((r) => r.domain === domain && r.drafter === drafter && r.policy === policy && r.batch === batch);
  const best = (drafter: string) => Math.max(...rows.filter((r) => r.domain === domain && r.drafter === drafter && r.batch === batches[0] && r.policy !== 'ar').map((r) => r.wallVsAr));
  const sDraft = at('draft', 'static', batches[0]);
  for (const head of headsShown) {
    const sHead = at(head, 'static', batches[0]);
    const ratio = (pick: (r: Row) => number) => (sHead && sDraft ? f(pick(sHead) / pick(sDraft), 3) : '-');
    out.push(`| ${domain} | ${head} | ${ratio((r) => r.mal)} | ${ratio((r) => r.draftMsPerStep)} | ${f(best('draft'), 3)} / ${f(best(head), 3)} |`);
  }
}
process.stdout.write(`${out.join('\n')}\n`);
