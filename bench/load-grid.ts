// ECHO against `ar` and `static` at every load, on the modelled clocks (a script, not a test):
// `echo-studio sweep --policies ar,static,echo` per drafter, clock and domain, batches 1 to 64, run
// as a user runs it (the CLI, one process per sweep), two sweeps at a time. A modelled clock
// repeats a greedy run to the last digit whatever else the machine does, so the sweeps may share
// it; no wall-clock figure is written. Writes OUT/README.md (generated, with the issue's targets
// checked) and OUT/grid.csv (one row per drafter, clock, domain, batch and policy).
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
// --max-new-tokens [64] --hw [h100:70b] (the roofline clock) --clocks [device,curves] (which of the two
// to run) --jobs [2].
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
  flags: string[];
}
const clocksRun = args.clocks.split(',');
const sweeps: Sweep[] = [];
for (const d of drafters) {
  for (const domain of domains) {
    if (clocksRun.includes('device')) sweeps.push({ drafter: d.name, clock: args.hw, domain, flags: [...d.flags, '--hw', args.hw] });
    const priced = d.priceProfile ? ['--price-profile', d.priceProfile] : [];
    if (d.profile && clocksRun.includes('curves')) sweeps.push({ drafter: d.name, clock: 'curves', domain, flags: [...d.flags, '--hw', 'curves', '--hw-profile', d.profile, ...priced] });
  }
}

interface SweepJson {
  clock: string;
  rows: { batch: number; kmax: number; policy: string; modelledThroughput: number; sameTokens: boolean; metrics: { meanAcceptedTokens: number; verifiedTokensPerStep: number } }[];
}
interface Row {
  drafter: string;
  clock: string;
  domain: string;
  batch: number;
  kmax: number;
  policy: string;
  tokPerS: number;
  mat: number;
  verified: number;
  sameTokens: boolean;
}

function runSweep(s: Sweep): Promise<{ sweep: Sweep; json: SweepJson }> {
  const argv = ['bin/echo-studio.js', 'sweep', '--policies', 'ar,static,echo', '--batches', args.batches, '--domain', s.domain,
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
const queue = [...sweeps];
await Promise.all(
  Array.from({ length: Math.max(1, Number(args.jobs)) }, async () => {
    for (let s = queue.shift(); s; s = queue.shift()) {
      results.push(await runSweep(s));
      console.error(`${results.length}/${sweeps.length}: ${s.drafter}, ${s.clock}, ${s.domain} (${Math.round((Date.now() - started) / 1000)} s)`);
    }
  }),
);

const rows: Row[] = results.flatMap(({ sweep, json }) =>
  json.rows.map((r) => ({
    drafter: sweep.drafter, clock: sweep.clock, domain: sweep.domain, batch: r.batch, kmax: r.kmax, policy: r.policy,
    tokPerS: r.modelledThroughput, mat: r.metrics.meanAcceptedTokens, verified: r.metrics.verifiedTokensPerStep, sameTokens: r.sameTokens,
  })),
);
const clockNames = new Map(results.map(({ sweep, json }) => [sweep.clock, json.clock]));

mkdirSync(out, { recursive: true });
const csv = ['drafter,clock,domain,batch,kmax,policy,tok_per_s,mean_accepted,verified_per_step,same_tokens_as_baseline'];
for (const r of rows) csv.push([r.drafter, r.clock, r.domain, r.batch, r.kmax, r.policy, r.tokPerS.toFixed(2), r.mat.toFixed(3), r.verified.toFixed(2), r.sameTokens].join(','));
writeFileSync(join(out, 'grid.csv'), csv.join('\n') + '\n');
for (const d of drafters) {
  if (d.profile) copyFileSync(d.profile, join(out, `profile-hw-${d.name}.json`));
  if (d.priceProfile) copyFileSync(d.priceProfile, join(out, `price-profile-hw-${d.name}.json`));
}

const find = (drafter: string, clock: string, domain: string, batch: number, policy: string) =>
  rows.find((r) => r.drafter === drafter && r.clock === clock && r.domain === domain && r.batch === batch && r.policy === policy);
const batches = [...new Set(rows.map((r) => r.batch))].sort((a, b) => a - b);
const clocks = [...new Set(rows.map((r) => r.clock))];
const lines: string[] = [];
const misses: string[] = [];
lines.push(`# ECHO against \`ar\` and \`static\` at every load, modelled clocks, ${new Date().toISOString().slice(0, 10)}`, '');
lines.push('Generated by `bench/load-grid.ts` (do not edit by hand); every row of it is in `grid.csv`.');
lines.push(`Each cell is one \`echo-studio sweep --policies ar,static,echo\` on the bundled pair, ${args.requests} requests × ${args['max-new-tokens']} new tokens,`);
lines.push('greedy, K_max from the clock\'s knee (the sweep\'s default), ECHO calibrated by its warm-up on the first 24 prompts.');
lines.push('A modelled clock times each step by its device model, so a greedy run repeats to the last digit and one round is the');
lines.push('measurement. Cells: `echo` ÷ `static` / `echo` ÷ `ar`; **bold** where ECHO is below max(`ar`, `static`).');
lines.push(`Clocks: ${[...clockNames].map(([k, v]) => `\`${k}\` = ${v}`).join('; ')}. The curves profiles are in this folder.`);
const pricedApart = drafters.filter((d) => d.priceProfile).map((d) => d.name);
if (pricedApart.length) {
  lines.push(`On \`curves\` the ${pricedApart.join(' and ')} rows are priced by another profile of the machine (\`price-profile-hw-*.json\`) and timed by \`profile-hw-*.json\`: a step's shape is not chosen on the curve that times it.`);
}
lines.push('');
for (const drafter of drafters.map((d) => d.name)) {
  for (const clock of clocks) {
    if (!rows.some((r) => r.drafter === drafter && r.clock === clock)) continue;
    lines.push(`## ${drafter === 'head' ? 'EAGLE-3 head' : 'Small draft'}, \`${clock}\``, '');
    lines.push(`| domain | ${batches.map((b) => `batch ${b}`).join(' | ')} |`, `|---|${batches.map(() => '---').join('|')}|`);
    for (const domain of domains) {
      const cells = batches.map((b) => {
        const [ar, st, echo] = ['ar', 'static', 'echo'].map((p) => find(drafter, clock, domain, b, p));
        if (!ar || !st || !echo) return '-';
        const cell = `${(echo.tokPerS / st.tokPerS).toFixed(3)} / ${(echo.tokPerS / ar.tokPerS).toFixed(3)}`;
        if (echo.tokPerS < Math.max(ar.tokPerS, st.tokPerS)) {
          misses.push(`${drafter}, ${clock}, ${domain}, batch ${b}: echo ÷ max(ar, static) ${(echo.tokPerS / Math.max(ar.tokPerS, st.tokPerS)).toFixed(4)}`);
          return `**${cell}**`;
        }
        return cell;
      });
      lines.push(`| ${domain} | ${cells.join(' | ')} |`);
    }
    const high = [32, 64].filter((b) => batches.includes(b)).map((b) => {
      const over = domains.filter((domain) => {
        const st = find(drafter, clock, domain, b, 'static');
        const echo = find(drafter, clock, domain, b, 'echo');
        return st && echo && echo.tokPerS / st.tokPerS >= 1.05;
      });
      return `batch ${b}: ${over.length ? over.join(', ') : 'none'}`;
    });
    lines.push('', `\`echo\` ÷ \`static\` ≥ 1.05 in: ${high.join('; ')}.`, '');
  }
}
lines.push('## Below max(`ar`, `static`)', '');
lines.push(misses.length ? misses.map((m) => `- ${m}`).join('\n') : 'Nowhere: ECHO is at or above both at every batch, domain, drafter and clock.', '');
lines.push(`Sweeps took ${Math.round((Date.now() - started) / 1000)} s, ${args.jobs} at a time; every speculative run's tokens equal \`static\`'s: ${rows.every((r) => r.sameTokens) ? 'yes' : 'NO'}.`);
writeFileSync(join(out, 'README.md'), lines.join('\n') + '\n');
console.log(lines.join('\n'));
console.error(`wrote ${join(out, 'README.md')} and ${basename(join(out, 'grid.csv'))}`);
