// The report's "Where the budget goes" section: per batch size and policy, what the verified
// tokens bought, what drafting cost, what the gates cut, and the oracle and random gate bounds on
// the same steps (metrics/budget-explanation.ts), as a table, CSVs, two figures and, per batch
// size, ECHO's result against static explained in numbers. Pure: data in, strings out.
import { type BudgetExplanation, type ExplanationRow, LOAD_POLICIES, type StudyExplanations } from '../../engine/index.js';
import { escapeXml, groupedBars, lineChart, PALETTE } from './svg.js';

const h = escapeXml;
const f = (x: number | undefined | null, digits = 3) => (x === undefined || x === null || !Number.isFinite(x) ? '' : x.toFixed(digits));
const pct = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x * 100).toFixed(1)} %` : 'n/a');
const share = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)} %` : 'n/a');

/**
 * The ratio the throughput table reads for a policy ÷ static at a batch size, on the explanation's
 * clock (wall: the rounds' median), and the A/A band it is read against (0 on a modelled clock).
 */
export type MeasuredRatio = (batch: number, policy: string) => { ratio: number; band: number } | undefined;

export interface ExplainSection {
  files: Record<string, string>;
  html: string;
}

type Cell = string | number | boolean | null | undefined;

function csv(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<Cell>>): string {
  const cell = (v: Cell) => {
    const s = v === null || v === undefined ? '' : typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return `${[header, ...rows].map((r) => r.map(cell).join(',')).join('\n')}\n`;
}

function table(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string>>): string {
  return `<table><thead><tr>${header.map((c) => `<th>${h(c)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('')}</tbody></table>`;
}

/** What the explanation table's bounds and columns mean. */
const BOUNDS_LEGEND = `<ul>
<li><b>oracle gate</b>: on every request-step, verify exactly the drafted candidates the target accepts (no more than the request can still emit, within K_max): the most any gate, or any choice of verified nodes, can buy from these drafts. Its accepted per verified draft token is 1.</li>
<li><b>random gate</b>: every gate check the policy made passes with the policy's own keep rate (passes ÷ checks) instead of by confidence; a random cut where the policy kept keeps only its verified nodes above that depth (the budget it frees is left unused); a random keep where the policy cut keeps the cut layer's best candidate as well, and nothing deeper (never drafted). The expectation over the coin flips is exact. What gating buys without a signal: the policy ÷ random gate is what its confidence signal buys.</li>
<li><b>free drafting</b>: the same verified nodes with the draft forwards' time taken out: what drafting costs.</li>
<li><b>host ms/step (wall)</b>: the engine's own work a step on the wall, outside onnxruntime's run() calls (the policy's scheduling, packing, the sessions' feeds and K/V writes, bookkeeping), over the steps that prefilled nothing. No modelled clock charges it; the wall clock always does.</li>
<li><b>false cut</b>: a gate cut a layer holding a candidate the target accepts (tokens lost: those candidates never verified); <b>false keep</b>: a gate kept a layer none of whose candidates the target accepts. <b>accepted / reach</b>: accepted draft tokens per request-step, against those the drafted candidates held (had every candidate been verified).</li>
</ul>`;

/** Time per emitted token, split into drafting and the rest (verification, bookkeeping). */
function perToken(x: BudgetExplanation): { draft: number; rest: number; total: number } {
  const tokens = Math.max(1, x.actual.emitted);
  const draft = x.actual.ms - x.freeDrafting.ms;
  return { draft: draft / tokens, rest: x.freeDrafting.ms / tokens, total: x.actual.ms / tokens };
}

const ORDER = LOAD_POLICIES.filter((p) => p !== 'ar');

export function explainSection(explain: StudyExplanations, measured: MeasuredRatio, colors: (policy: string) => string): ExplainSection {
  const rows = explain.rows.filter((r) => r.policy !== 'ar').sort((a, b) => a.batch - b.batch || ORDER.indexOf(a.policy as (typeof ORDER)[number]) - ORDER.indexOf(b.policy as (typeof ORDER)[number]));
  const batches = [...new Set(rows.map((r) => r.batch))];
  const row = (batch: number, policy: string) => rows.find((r) => r.batch === batch && r.policy === policy);
  const unit = explain.clock === 'wall' ? 'ms' : 'modelled ms';
  const files: Record<string, string> = {};

  files['explain.csv'] = csv(
    ['domain', 'clock', 'batch', 'kmax', 'policy', 'steps', 'request_steps', 'tok_s', 'random_gate_tok_s', 'oracle_gate_tok_s', 'free_drafting_tok_s', 'accepted', 'verified_tokens', 'emitted', 'accepted_per_verified', 'random_accepted', 'random_verified_tokens', 'oracle_accepted', 'oracle_verified_tokens', 'reach', 'drafted', 'draft_forwards_per_step', 'draft_share', 'host_ms_per_step', 'gate_checks', 'keep_rate', 'cuts_waived', 'kept_accepted', 'false_keeps', 'false_cuts', 'right_cuts', 'tokens_lost_to_cuts', 'kept_rejected_nodes', 'unknown_verdicts', 'candidates_seen'],
    rows.map(({ batch, kmax, policy, explanation: x }) => [
      explain.domain, explain.clock, batch, kmax, policy, x.steps, x.requestSteps, x.actual.throughput, x.random?.throughput, x.oracle.throughput, x.freeDrafting.throughput,
      x.actual.accepted, x.actual.verifiedTokens, x.actual.emitted, x.actual.acceptedPerVerified, x.random?.accepted, x.random?.verifiedTokens, x.oracle.accepted, x.oracle.verifiedTokens,
      x.reach, x.drafted, x.draft.forwardsPerStep, x.draft.share, x.hostMsPerStep, x.gates?.checks, x.gates?.keepRate, x.gates?.waived, x.gates?.keptAccepted, x.gates?.falseKeeps, x.gates?.falseCuts, x.gates?.rightCuts, x.gates?.lostTokens, x.gates?.keptRejectedNodes, x.unknownVerdicts, x.candidatesSeen,
    ]),
  );
  files['explain-depth.csv'] = csv(
    ['domain', 'batch', 'policy', 'depth', 'drafted', 'verified', 'accepted', 'target_accepts'],
    rows.flatMap(({ batch, policy, explanation: x }) => x.byDepth.map((d) => [explain.domain, batch, policy, d.depth, d.drafted, d.verified, d.accepted, d.targetAccepts])),
  );
  files['explain-confidence.csv'] = csv(
    ['domain', 'batch', 'policy', 'confidence_lo', 'confidence_hi', 'drafted', 'verified', 'accepted', 'target_accepts'],
    rows.flatMap(({ batch, policy, explanation: x }) => x.byConfidence.map((b) => [explain.domain, batch, policy, b.lo, b.hi, b.drafted, b.verified, b.accepted, b.targetAccepts])),
  );

  // Throughput on the explained steps ÷ static's, with echo's bounds beside it.
  const vsStatic = (batch: number, pick: (x: BudgetExplanation) => number | undefined, policy: string) => {
    const base = row(batch, 'static')?.explanation.actual.throughput;
    const x = row(batch, policy);
    const v = x ? pick(x.explanation) : undefined;
    return v !== undefined && base ? v / base : NaN;
  };
  const policies = ORDER.filter((p) => rows.some((r) => r.policy === p));
  const gated = rows.some((r) => r.policy === 'echo');
  files['explain-bounds.svg'] = groupedBars({
    title: `Throughput on the same steps ÷ static, with echo's gate bounds (${explain.domain}, ${explain.clock})`,
    yLabel: 'tokens / s ÷ static',
    categories: batches.map((b) => `batch ${b}`),
    series: [
      ...policies.map((p) => ({ name: p, color: colors(p), values: batches.map((b) => vsStatic(b, (x) => x.actual.throughput, p)) })),
      ...(gated
        ? [
            { name: 'echo, random gate', color: '#bdbdbd', values: batches.map((b) => vsStatic(b, (x) => x.random?.throughput, 'echo')) },
            { name: 'echo, oracle gate', color: '#f4a3a3', values: batches.map((b) => vsStatic(b, (x) => x.oracle.throughput, 'echo')) },
            { name: 'echo, free drafting', color: '#fdd49e', values: batches.map((b) => vsStatic(b, (x) => x.freeDrafting.throughput, 'echo')) },
          ]
        : []),
    ],
    reference: 1,
    width: 840, // room for the legend's longest name
  });
  const top = batches[batches.length - 1];
  const depthSeries = (['echo', 'static'] as const).flatMap((p) => {
    const x = row(top, p)?.explanation;
    if (!x) return [];
    const perStep = (v: number) => v / Math.max(1, x.steps);
    return [
      { name: `${p}: verified`, color: colors(p), points: x.byDepth.map((d) => [d.depth, perStep(d.verified)] as [number, number]) },
      { name: `${p}: accepted`, color: colors(p), dashed: true, points: x.byDepth.map((d) => [d.depth, perStep(d.accepted)] as [number, number]) },
      ...(p === 'echo' ? [{ name: 'echo: oracle', color: '#f4a3a3', points: x.byDepth.map((d) => [d.depth, perStep(d.targetAccepts)] as [number, number]) }] : []),
    ];
  });
  if (depthSeries.length > 0) {
    files['explain-depth.svg'] = lineChart({ title: `Draft tokens per step by depth at batch ${top} (oracle: what the target accepts of echo's drafts)`, xLabel: 'depth', yLabel: 'tokens per step', series: depthSeries, width: 620 });
  }

  const tableRows = rows.map(({ batch, kmax, policy, explanation: x }) => {
    const g = x.gates;
    return [
      String(batch),
      String(kmax),
      h(policy),
      f(x.actual.throughput, 1),
      x.random ? `${f(x.random.throughput, 1)} (${f(x.random.throughput / x.actual.throughput, 2)}×)` : '',
      `${f(x.oracle.throughput, 1)} (${f(x.oracle.throughput / x.actual.throughput, 2)}×)`,
      `${f(x.freeDrafting.throughput, 1)} (${f(x.freeDrafting.throughput / x.actual.throughput, 2)}×)`,
      `${f(x.actual.acceptedPerVerified, 2)}${x.random ? ` · ${f(x.random.acceptedPerVerified, 2)}` : ''}`,
      `${f(x.actual.accepted / Math.max(1, x.requestSteps), 2)} / ${f(x.reach / Math.max(1, x.requestSteps), 2)}`,
      f(x.actual.verifiedTokens / Math.max(1, x.steps), 1),
      f(x.draft.forwardsPerStep, 2),
      share(x.draft.share),
      x.hostMsPerStep === null ? '' : f(x.hostMsPerStep, 2),
      g ? `${g.checks} · ${share(g.keepRate)}` : '',
      g ? `${g.falseCuts} (${g.lostTokens} tok)` : '',
      g ? String(g.falseKeeps) : '',
    ];
  });

  // Per depth and per confidence bin: verified · accepted, and what the target accepts of the drafts (the oracle's).
  const depths = Math.max(0, ...rows.map((r) => r.explanation.byDepth.length));
  const cell = (verified: number, accepted: number, targetAccepts: number, drafted: number) => (drafted === 0 ? '' : `${verified} · ${accepted} <small>(${targetAccepts}/${drafted})</small>`);
  const depthTable = table(
    ['batch', 'policy', ...Array.from({ length: depths }, (_, d) => `depth ${d}`)],
    rows.map(({ batch, policy, explanation: x }) => [String(batch), h(policy), ...Array.from({ length: depths }, (_, d) => (x.byDepth[d] ? cell(x.byDepth[d].verified, x.byDepth[d].accepted, x.byDepth[d].targetAccepts, x.byDepth[d].drafted) : ''))]),
  );
  const bins = rows[0]?.explanation.byConfidence ?? [];
  const confidenceTable = table(
    ['batch', 'policy', ...bins.map((b) => `${b.lo}–${b.hi}`)],
    rows.map(({ batch, policy, explanation: x }) => [String(batch), h(policy), ...x.byConfidence.map((b) => cell(b.verified, b.accepted, b.targetAccepts, b.drafted))]),
  );

  const why = batches.map((b) => diagnose(b, row(b, 'echo'), row(b, 'static'), measured(b, 'echo'), unit)).filter((s) => s !== '');

  const html = `<h2>Where the budget goes: signal, scheduler or drafting</h2>
<p>Each policy's first round at each batch size (${h(explain.domain)}), explained step by step; greedy rounds repeat the same steps. The target's verdict on every drafted candidate, verified or not, is read off the run's own output: at temperature 0 the tokens a request emitted from a step on are the target's argmax path from that step's prefix, so a candidate is accepted by the target exactly when its path from the root is a prefix of them. Times are on the clock in use (${h(explain.clock)}${explain.verifySlopes ? `; a bound's change of verified tokens moves the step's time by the verification forward's slope fitted over every policy's steps at that batch size: ${h(Object.entries(explain.verifySlopes).map(([b, s]) => `batch ${b} ${s.toFixed(4)} ms/token`).join(', '))}` : ''}), decoding only (prefill left out); tok/s here is emitted tokens over the explained steps' time, so it can differ from the median round above. The analysis took ${explain.seconds.toFixed(1)} s apart from the runs, which only kept a reference to each step's trees.</p>
${BOUNDS_LEGEND}
<figure>${files['explain-bounds.svg']}</figure>
${files['explain-depth.svg'] ? `<figure>${files['explain-depth.svg']}</figure>` : ''}
${table(['batch', 'K_max', 'policy', 'tok/s', 'random gate', 'oracle gate', 'free drafting', 'accepted ÷ verified draft (random)', 'accepted / reach per request-step', 'verified/step', 'draft forwards/step', 'drafting share of time', 'host ms/step (wall)', 'gate checks · kept', 'false cuts (lost)', 'false keeps'], tableRows)}
${why.length > 0 ? `<h3>echo against static, per batch size</h3>\n<ul>${why.map((w) => `<li>${w}</li>`).join('\n')}</ul>` : ''}
<details><summary>Verified · accepted draft tokens by depth (target-accepted / drafted candidates: what the oracle verifies, out of what was drafted)</summary>
${depthTable}</details>
<details><summary>The same by confidence bin (the candidate's path probability)</summary>
${confidenceTable}</details>
<p>The same in <code>explain-depth.csv</code> and <code>explain-confidence.csv</code>; every number of the table above in <code>explain.csv</code>.</p>`;
  return { files, html };
}

/**
 * echo against static at one batch size, in numbers: the measured ratio, where each one's time per
 * token goes, what echo's gates did and what the bounds say; where echo misses (ratio ≤ 1), the
 * term that costs it most.
 */
export function diagnose(batch: number, echo: ExplanationRow | undefined, base: ExplanationRow | undefined, measured: { ratio: number; band: number } | undefined, unit: string): string {
  if (!echo || !base) return '';
  const e = echo.explanation;
  const s = base.explanation;
  const te = perToken(e);
  const ts = perToken(s);
  const sameSteps = e.actual.throughput / s.actual.throughput;
  const ratio = measured?.ratio ?? sameSteps;
  // A miss: echo not above static beyond the A/A band (within it, no difference beyond noise).
  const band = measured && Number.isFinite(measured.band) ? measured.band : 0;
  const miss = ratio <= 1 + band;
  const verdict = !miss ? '' : ratio < 1 - band || band === 0 ? ' — <b>a miss</b>' : ` — <b>a miss</b>: within the A/A band 1 ± ${f(band)}, no gain beyond noise`;
  const parts: string[] = [];
  parts.push(`<b>Batch ${batch}</b> (K_max ${echo.kmax}): echo ÷ static ${f(ratio)}${measured !== undefined ? ` (${unit === 'ms' ? "rounds' median" : 'median round'}; ${f(sameSteps)} on the explained steps)` : ''}${verdict}.`);
  parts.push(`Per emitted token echo spends ${f(te.draft)} ${h(unit)} drafting and ${f(te.rest)} on the rest, static ${f(ts.draft)} and ${f(ts.rest)}; echo runs ${f(e.draft.forwardsPerStep, 2)} draft forwards a step (static ${f(s.draft.forwardsPerStep, 2)}), ${share(e.draft.share)} of its time (static ${share(s.draft.share)}).`);
  if (e.hostMsPerStep !== null && s.hostMsPerStep !== null) {
    parts.push(`Outside onnxruntime's run() calls the engine worked ${f(e.hostMsPerStep, 2)} ms a step on the wall for echo and ${f(s.hostMsPerStep, 2)} for static (scheduling, packing, feeds, bookkeeping; no modelled clock charges it).`);
  }
  parts.push(`It verifies ${f(e.actual.verifiedTokens / Math.max(1, e.steps), 1)} tokens a step of its K_max ${echo.kmax} (static ${f(s.actual.verifiedTokens / Math.max(1, s.steps), 1)}) and accepts ${f(e.actual.acceptedPerVerified, 2)} per verified draft token (static ${f(s.actual.acceptedPerVerified, 2)}); its drafts held ${f(e.reach / Math.max(1, e.requestSteps), 2)} acceptable tokens a request-step and it verified ${f(e.actual.accepted / Math.max(1, e.requestSteps), 2)} of them.`);
  const g = e.gates;
  if (g && (g.keepRate === 1 || g.keepRate === 0)) {
    parts.push(`Its gates ${g.keepRate === 1 ? 'kept' : 'cut'} every one of their ${g.checks} checks (${g.falseKeeps} false keeps, ${g.falseCuts} false cuts${g.waived > 0 ? `; ${g.waived} failed checks kept because the cut would have freed budget worth less than the layer` : ''}): the confidence signal decided nothing here, and a random gate at that rate is the run itself.`);
  } else if (g && e.random) {
    const signal = e.actual.throughput / e.random.throughput - 1;
    parts.push(`Its gates kept ${share(g.keepRate)} of ${g.checks} checks${g.waived > 0 ? ` (${g.waived} of them failed, their cut waived as worth less than the layer)` : ''}: ${g.falseCuts} false cuts (losing at least ${g.lostTokens} accepted tokens) and ${g.falseKeeps} false keeps; a random gate at that keep rate reads ${f(e.random.throughput, 1)} tok/s against echo's ${f(e.actual.throughput, 1)}, so the confidence signal buys ${pct(signal)}.`);
  } else {
    parts.push('Its gates made no check on these steps (no τ_d applied), so the signal had nothing to decide.');
  }
  if (e.steps === s.steps && e.requestSteps < s.requestSteps) {
    // A batch that drains (no request waiting for a slot) ends with its slowest request.
    parts.push(`Both ran ${e.steps} steps: the batch's slowest request sets that count, so echo's ${pct(s.requestSteps / e.requestSteps - 1)} more tokens a request-step (${e.requestSteps} request-steps against ${s.requestSteps}) do not shorten the run here: what echo gains is cheaper steps, not fewer.`);
  }
  const oracle = e.oracle.throughput / e.actual.throughput - 1;
  const free = e.freeDrafting.throughput / e.actual.throughput - 1;
  parts.push(`The oracle gate would read ${f(e.oracle.throughput, 1)} tok/s (${pct(oracle)}); free drafting ${f(e.freeDrafting.throughput, 1)} (${pct(free)}).`);
  if (miss) {
    // Where echo's time per token exceeds static's: drafting, or the rest (verification per token, set by what each step accepts).
    const draftGap = (te.draft - ts.draft) / ts.total;
    const restGap = (te.rest - ts.rest) / ts.total;
    const cause =
      draftGap >= restGap
        ? `drafting: echo's drafting costs ${pct(draftGap)} of static's time per token, the rest ${pct(restGap)}`
        : `the tokens its steps buy: the rest of echo's time per token (verification and bookkeeping, over what each step accepts) is ${pct(restGap)} of static's, drafting ${pct(draftGap)}`;
    const signalNote =
      g && (g.keepRate === 1 || g.keepRate === 0) ? '; its gates did not act' : g && e.random && e.actual.throughput <= e.random.throughput ? '; its gates do no better than a random gate at the same keep rate' : '';
    parts.push(`Why it misses: ${cause}${signalNote}.`);
  }
  return parts.join(' ');
}
