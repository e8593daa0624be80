// ECHO against `ar` and `static` at every load (a script, not a test): `echo-studio sweep
// --policies ar,static,echo` per drafter, clock and domain, batches 1 to 64, run as a user runs it
// (the CLI, one process per sweep). A modelled clock repeats a greedy run to the last digit whatever
// else the machine does, so those sweeps run two at a time and one round is the measurement. The
// wall clock (`--clocks wall`, opt-in) runs its sweeps one at a time after them, in interleaved
// rounds with an A/A control (`static` against itself), priced by the drafter's profile as a user's
// `sweep --hw-profile` is; a ratio is the median of the rounds' and the control's range is the band
// it is read against. Writes OUT/README.md (generated, with the issue's targets checked) and
// OUT/grid.csv (one row per drafter, clock, domain, batch and policy).
//
//   node scripts/build.mjs && npx esbuild bench/load-grid.ts --bundle --platform=node --format=esm \
//     --packages=external --outfile=node_modules/.cache/bench/load-grid.mjs && \
//     node node_modules/.cache/bench/load-grid.mjs --out docs/reports/DATE-load-grid \
//       --profile-draft hw.json --profile-head hw-head.json
//
// Options [defaults]: --out DIR (required) --profile-draft FILE, --profile-head FILE (profile-hw
// files measured with each drafter: the `curves` clock and its K_max; without one that drafter's
// curves rows are left out) --price-profile-draft FILE, --price-profile-head FILE (another profile
// of this machine that prices the curves rows while the first times them: sweep --price-profile) --domains [code,prose,math] --batches [1,4,8,16,32,64] --requests [64]
// --max-new-tokens [64] --hw [h100:70b] (the roofline clock) --clocks [device,curves] (of device, curves
// and wall) --wall-batches [32,64] --wall-rounds [3] --jobs [2] (modelled sweeps at a time).
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    out: { type: 'string' },
    'profile-draft': { type: 'string' },
    'profile-head': { type: 'string' },
    'price-profile-draft': { type: 'string' },
    'price-profile-head': { type: 'string' },
    domains: { type: 'string', default: 'code,prose,math' },
    batches: { type: 'string', default: '1,4,8,16,32,64' },
    requests: { type: 'string', default: '64' },
    'max-new-tokens': { type: 'string', default: '64' },
    hw: { type: 'string', default: 'h100:70b' },
    clocks: { type: 'string', default: 'device,curves' },
    'wall-batches': { type: 'string', default: '32,64' },
    'wall-rounds': { type: 'string', default: '3' },
    jobs: { type: 'string', default: '2' },
  },
});
if (!args.out) throw new Error('--out DIR is required');
const out = args.out;
const domains = args.domains.split(',');
const drafters = [
  { name: 'draft', flags: [] as string[], profile: args['profile-draft'], priceProfile: args['price-profile-draft'] },
  { name: 'head', flags: ['--draft-kind', 'head'], profile: args['profile-head'], priceProfile: args['price-profile-head'] },
];
for (const d of drafters) if (d.priceProfile && !d.profile) throw new Error(`--price-profile-${d.name} needs --profile-${d.name}: it prices what that profile's curves time`);

interface Sweep {
  drafter: string;
  clock: string;
  domain: string;
  batches: string;
  flags: string[];
}
const clocksRun = args.clocks.split(',');
const sweeps: Sweep[] = [];
for (const d of drafters) {
  for (const domain of domains) {
    if (clocksRun.includes('device')) sweeps.push({ drafter: d.name, clock: args.hw, domain, batches: args.batches, flags: [...d.flags, '--hw', args.hw] });
    const priced = d.priceProfile ? ['--price-profile', d.priceProfile] : [];
    if (d.profile && clocksRun.includes('curves')) {
      sweeps.push({ drafter: d.name, clock: 'curves', domain, batches: args.batches, flags: [...d.flags, '--hw', 'curves', '--hw-profile', d.profile, ...priced] });
    }
  }
}
// Wall sweeps last and alone: each one needs the machine to itself.
const wallSweeps: Sweep[] = [];
for (const d of drafters) {
  if (!d.profile || !clocksRun.includes('wall')) continue;
  for (const domain of domains) {
    const flags = [...d.flags, '--hw-profile', d.profile, '--rounds', args['wall-rounds'], '--control', '--baseline', 'static'];
    wallSweeps.push({ drafter: d.name, clock: 'wall', domain, batches: args['wall-batches'], flags });
  }
}

interface SweepRow {
  batch: number;
  kmax: number;
  policy: string;
  modelledThroughput?: number;
  roundThroughputs: number[];
  sameTokens: boolean;
  metrics: { meanAcceptedTokens: number; verifiedTokensPerStep: number };
  decodeStepMs?: { model: number; engine: number };
}
interface SweepJson {
  clock?: string;
  rows: SweepRow[];
}
/** A ratio over rounds: the median of the rounds' ratios and their range (one round on a modelled clock). */
interface Spread {
  median: number;
  min: number;
  max: number;
}
interface Row {
  drafter: string;
  clock: string;
  domain: string;
  batch: number;
  kmax: number;
  policy: string;
  tokPerS: number;
  vsStatic: Spread;
  vsAr: Spread;
  mat: number;
  verified: number;
  sameTokens: boolean;
  /** The median decode step of every round: onnxruntime's calls and the engine's work around them (ms). */
  onnxMs: number;
  engineMs: number;
}

function runSweep(s: Sweep): Promise<{ sweep: Sweep; json: SweepJson }> {
  const argv = ['bin/echo-studio.js', 'sweep', '--policies', 'ar,static,echo', '--batches', s.batches, '--domain', s.domain,
    '--requests', args.requests, '--max-new-tokens', args['max-new-tokens'], '--threads', '1', '--json', ...s.flags];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, argv, { maxBuffer: 1 << 28 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`sweep ${s.drafter} ${s.clock} ${s.domain} failed: ${stderr.trim().split('\n').pop()}`));
      else resolve({ sweep: s, json: JSON.parse(stdout) as SweepJson });
    });
  });
}

const started = Date.now();
const results: { sweep: Sweep; json: SweepJson }[] = [];
const total = sweeps.length + wallSweeps.length;
async function drain(queue: Sweep[], jobs: number): Promise<void> {
  await Promise.all(
    Array.from({ length: jobs }, async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        results.push(await runSweep(s));
        console.error(`${results.length}/${total}: ${s.drafter}, ${s.clock}, ${s.domain} (${Math.round((Date.now() - started) / 1000)} s)`);
      }
    }),
  );
}
await drain([...sweeps], Math.max(1, Number(args.jobs)));
await drain([...wallSweeps], 1);

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
/** Per-round ratios of `row` to `base` (the same batch's other policy in the same sweep). */
function spread(row: SweepRow, base: SweepRow | undefined, modelled: boolean): Spread {
  if (!base) return { median: NaN, min: NaN, max: NaN };
  if (modelled) {
    const r = row.modelledThroughput! / base.modelledThroughput!;
    return { median: r, min: r, max: r };
  }
  const ratios = row.roundThroughputs.map((t, i) => t / base.roundThroughputs[i]);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}
const rows: Row[] = results.flatMap(({ sweep, json }) => {
  const modelled = sweep.clock !== 'wall';
  return json.rows.map((r) => {
    const same = (policy: string) => json.rows.find((o) => o.batch === r.batch && o.policy === policy);
    return {
      drafter: sweep.drafter, clock: sweep.clock, domain: sweep.domain, batch: r.batch, kmax: r.kmax, policy: r.policy,
      tokPerS: modelled ? r.modelledThroughput! : median(r.roundThroughputs),
      vsStatic: spread(r, same('static'), modelled),
      vsAr: spread(r, same('ar'), modelled),
      mat: r.metrics.meanAcceptedTokens, verified: r.metrics.verifiedTokensPerStep, sameTokens: r.sameTokens,
      onnxMs: r.decodeStepMs?.model ?? NaN, engineMs: r.decodeStepMs?.engine ?? NaN,
    };
  });
});
const clockNames = new Map(results.map(({ sweep, json }) => [sweep.clock, sweep.clock === 'wall' ? `this machine's wall clock, ${args['wall-rounds']} interleaved rounds, priced by the drafter's profile` : json.clock]));

mkdirSync(out, { recursive: true });
const csv = ['drafter,clock,domain,batch,kmax,policy,tok_per_s,vs_static,vs_static_min,vs_static_max,vs_ar,vs_ar_min,vs_ar_max,mean_accepted,verified_per_step,same_tokens_as_baseline,decode_step_onnx_ms,decode_step_engine_ms'];
const ratioCells = (x: Spread) => [x.median, x.min, x.max].map((v) => v.toFixed(4));
for (const r of rows) {
  csv.push([r.drafter, r.clock, r.domain, r.batch, r.kmax, r.policy, r.tokPerS.toFixed(2), ...ratioCells(r.vsStatic), ...ratioCells(r.vsAr), r.mat.toFixed(3), r.verified.toFixed(2), r.sameTokens, r.onnxMs.toFixed(3), r.engineMs.toFixed(3)].join(','));
}
writeFileSync(join(out, 'grid.csv'), csv.join('\n') + '\n');
for (const d of drafters) {
  if (d.profile) copyFileSync(d.profile, join(out, `profile-hw-${d.name}.json`));
  if (d.priceProfile) copyFileSync(d.priceProfile, join(out, `price-profile-hw-${d.name}.json`));
}

const find = (drafter: string, clock: string, domain: string, batch: number, policy: string) =>
  rows.find((r) => r.drafter === drafter && r.clock === clock && r.domain === domain && r.batch === batch && r.policy === policy);
const clocks = [...new Set(rows.map((r) => r.clock))];
const lines: string[] = [];
const misses: string[] = [];
const modelledClocks = clocks.some((c) => c !== 'wall');
const onWhat = [modelledClocks ? 'modelled clocks' : '', clocks.includes('wall') ? 'the wall clock' : ''].filter((x) => x !== '').join(' and ');
lines.push(`# ECHO against \`ar\` and \`static\` at every load, ${onWhat}, ${new Date().toISOString().slice(0, 10)}`, '');
lines.push('Generated by `bench/load-grid.ts` (do not edit by hand); every row of it is in `grid.csv`.');
lines.push(`Each cell is one \`echo-studio sweep --policies ar,static,echo\` on the bundled pair, ${args.requests} requests × ${args['max-new-tokens']} new tokens,`);
lines.push('greedy, K_max from the clock\'s knee (the sweep\'s default), ECHO calibrated by its warm-up on the first 24 prompts.');
if (modelledClocks) {
  lines.push('A modelled clock times each step by its device model, so a greedy run repeats to the last digit and one round is the');
  lines.push('measurement.');
}
lines.push('Cells: `echo` ÷ `static` / `echo` ÷ `ar`; **bold** where ECHO is below max(`ar`, `static`).');
if (clocks.includes('wall')) {
  lines.push(`On the wall clock each cell is the median of ${args['wall-rounds']} interleaved rounds' ratios (the policies take turns step by step, so the`);
  lines.push("machine's drift falls on all alike), and the A/A band is `static` run again in every round against itself: **bold** where ECHO is");
  lines.push("below `ar` or `static` by more than that band's low end says two identical runs can differ.");
}
lines.push(`Clocks: ${[...clockNames].map(([k, v]) => `\`${k}\` = ${v}`).join('; ')}. The profiles the curves and the wall clock's prices read are in this folder (\`profile-hw-*.json\`).`);
const pricedApart = drafters.filter((d) => d.priceProfile).map((d) => d.name);
if (pricedApart.length) {
  lines.push(`On \`curves\` the ${pricedApart.join(' and ')} rows are priced by another profile of the machine (\`price-profile-hw-*.json\`) and timed by \`profile-hw-*.json\`: a step's shape is not chosen on the curve that times it.`);
}
lines.push('');
for (const drafter of drafters.map((d) => d.name)) {
  for (const clock of clocks) {
    if (!rows.some((r) => r.drafter === drafter && r.clock === clock)) continue;
    lines.push(`## ${drafter === 'head' ? 'EAGLE-3 head' : 'Small draft'}, \`${clock}\``, '');
    const batches = [...new Set(rows.filter((r) => r.drafter === drafter && r.clock === clock).map((r) => r.batch))].sort((a, b) => a - b);
    lines.push(`| domain | ${batches.map((b) => `batch ${b}`).join(' | ')} |`, `|---|${batches.map(() => '---').join('|')}|`);
    const wall = clock === 'wall';
    for (const domain of domains) {
      const cells = batches.map((b) => {
        const echo = find(drafter, clock, domain, b, 'echo');
        if (!echo || Number.isNaN(echo.vsStatic.median) || Number.isNaN(echo.vsAr.median)) return '-';
        // On the wall a ratio counts as below only past what two identical runs differ by.
        const band = wall ? (find(drafter, clock, domain, b, 'static#2')?.vsStatic ?? null) : null;
        const floor = band ? Math.min(1, band.min) : 1;
        const worst = Math.min(echo.vsStatic.median, echo.vsAr.median);
        const cell = `${echo.vsStatic.median.toFixed(3)} / ${echo.vsAr.median.toFixed(3)}${band ? ` (A/A ${band.min.toFixed(3)}–${band.max.toFixed(3)})` : ''}`;
        if (worst < floor) {
          misses.push(`${drafter}, ${clock}, ${domain}, batch ${b}: echo ÷ max(ar, static) ${worst.toFixed(4)}${band ? `, below the A/A band's ${floor.toFixed(3)}` : ''}`);
          return `**${cell}**`;
        }
        return cell;
      });
      lines.push(`| ${domain} | ${cells.join(' | ')} |`);
    }
    const bar = wall ? 1.03 : 1.05;
    const high = [32, 64].filter((b) => batches.includes(b)).map((b) => {
      const over = domains.filter((domain) => (find(drafter, clock, domain, b, 'echo')?.vsStatic.median ?? 0) >= bar);
      return `batch ${b}: ${over.length ? over.join(', ') : 'none'}`;
    });
    lines.push('');
    if (high.length > 0) lines.push(`\`echo\` ÷ \`static\` ≥ ${bar} in: ${high.join('; ')}.`, '');
    if (wall) lines.push(...decodeStepTable(drafter, batches));
  }
}
/**
 * Where a wall cell's time goes, beside its ratios: the median decode step of each policy, split
 * into onnxruntime's calls and the engine's own work around them. Where ECHO decodes as `ar`
 * (the same forwards), the difference between their steps is the engine's.
 */
function decodeStepTable(drafter: string, batches: number[]): string[] {
  const policies = ['ar', 'static', 'echo'];
  const table = [
    'The median decode step (ms), onnxruntime\'s calls + the engine\'s own work around them (scheduling, packing, feeds, commit, the event):',
    '',
    `| domain | ${batches.flatMap((b) => policies.map((p) => `${p} ${b}`)).join(' | ')} |`,
    `|---|${batches.flatMap(() => policies.map(() => '---')).join('|')}|`,
  ];
  for (const domain of domains) {
    const cells = batches.flatMap((b) => policies.map((p) => {
      const r = find(drafter, 'wall', domain, b, p);
      return r && Number.isFinite(r.onnxMs) ? `${r.onnxMs.toFixed(1)} + ${r.engineMs.toFixed(2)}` : '-';
    }));
    table.push(`| ${domain} | ${cells.join(' | ')} |`);
  }
  return [...table, ''];
}

lines.push('## Below max(`ar`, `static`)', '');
lines.push(misses.length ? misses.map((m) => `- ${m}`).join('\n') : 'Nowhere: ECHO is at or above both at every batch, domain, drafter and clock.', '');
lines.push(`Sweeps took ${Math.round((Date.now() - started) / 1000)} s, the modelled ones ${args.jobs} at a time; every speculative run's tokens equal \`static\`'s: ${rows.every((r) => r.sameTokens) ? 'yes' : 'NO'}.`);
writeFileSync(join(out, 'README.md'), lines.join('\n') + '\n');
console.log(lines.join('\n'));
console.error(`wrote ${join(out, 'README.md')} and ${basename(join(out, 'grid.csv'))}`);
