// A study's report as files: a self-contained HTML page (inline SVG figures, tables, the claims
// with their computed verdicts, the paper's published numbers beside each figure, and how it was
// made), each figure as .svg, the numbers as CSV and one JSON. Pure: returns name → contents.
import {
  aaHalfWidth,
  type Claim,
  DOMAIN_BENCHMARK,
  formatServingHandOff,
  LOAD_CONTROL,
  LOAD_POLICIES,
  PAPER_BENCHMARKS,
  PAPER_FIGURES,
  PAPER_HIGH_LOAD,
  PAPER_METHOD,
  PAPER_TABLE1,
  percentile,
  roundRatiosOf,
  servingHandOff,
  type ServingHandOff,
  type ServingPair,
  type StudyData,
  type SweepRow,
  TABLE1_CONTROL,
  TABLE1_POLICIES,
} from '../../engine/index.js';
import { boxPlots, densityPanels, escapeXml, groupedBars, lineChart, PALETTE } from './svg.js';
import { explainSection, type ExplainSection } from './explain-section.js';

/** How the report was made: enough to rerun it and to know what it ran on. */
export interface ReportMeta {
  command: string;
  date: string;
  versions: Record<string, string>;
  machine: { cpu: string; cores: number; memoryGiB: number; platform: string; threads?: number };
  seeds: { run: number; bootstrap: number };
  pair: { draft: string; target: string };
  /** wall, or the modelled clock's label. */
  clock: string;
  quick: boolean;
  seconds: number;
  settings: Record<string, string | number>;
}

export interface ReportFiles {
  [name: string]: string;
}

const POLICY_COLOR: Record<string, string> = { ar: '#7f7f7f', chain: '#8c564b', static: PALETTE[0], eagle2: PALETTE[3], ddd: PALETTE[4], echo: PALETTE[1], dense: PALETTE[2], fixed: '#e377c2' };
const color = (policy: string) => POLICY_COLOR[policy] ?? '#000';
const f = (x: number | undefined | null, digits = 3) => (x === undefined || x === null || !Number.isFinite(x) ? '' : x.toFixed(digits));

function csv(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number | boolean | null | undefined>>): string {
  const cell = (v: string | number | boolean | null | undefined) => {
    const s = v === null || v === undefined ? '' : typeof v === 'number' ? (Number.isFinite(v) ? String(v) : '') : String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return `${[header, ...rows].map((r) => r.map(cell).join(',')).join('\n')}\n`;
}

/** Throughput ÷ ar's, paired within rounds: the median of the rounds' ratios, and their range. */
function vsAr(row: SweepRow, ar: SweepRow): { median: number; min: number; max: number } {
  const ratios = row.roundThroughputs.map((t, i) => t / ar.roundThroughputs[i]);
  return { median: percentile(ratios, 50), min: Math.min(...ratios), max: Math.max(...ratios) };
}

/**
 * The pair as a serving engine would take it (readServingPair on the study's folders), or why none
 * can: the report's hand-off then says so in its one line.
 */
export type ServingTarget = { pair: ServingPair } | { refused: string };

export function renderReport(data: StudyData, claims: readonly Claim[], meta: ReportMeta, serving: ServingTarget): ReportFiles {
  const files: ReportFiles = {};
  const modelled = data.load.rows.some((r) => r.modelledThroughput !== undefined);

  // Figs. 2, 6–9: one panel per depth and domain.
  const fig2 = data.calibrations.map(({ domain, profile }) =>
    densityPanels({
      title: `Confidence of accepted and rejected draft tokens by depth: ${domain} (${profile.confidence})`,
      xLabel: `layer confidence (${profile.confidence}); bold title: a sweet spot (AUC > δ = ${profile.delta})`,
      panels: profile.depths.map((d) => ({
        title: `depth ${d.depth}${d.depth === profile.targetDepth ? ' (target)' : ''}: AUC ${d.auc === null ? 'n/a' : d.auc.toFixed(3)}`,
        edges: d.histogram.edges,
        accepted: d.histogram.accepted,
        rejected: d.histogram.rejected,
        tau: d.tau,
        sweetSpot: d.sweetSpot,
      })),
    }),
  );
  data.calibrations.forEach((c, i) => (files[`fig2-densities-${c.domain}.svg`] = fig2[i]));
  files['calibration.csv'] = csv(
    ['domain', 'signal', 'depth', 'accepted', 'rejected', 'auc', 'tau', 'sweet_spot', 'seconds'],
    data.calibrations.flatMap(({ domain, profile, seconds }) => profile.depths.map((d) => [domain, profile.confidence, d.depth, d.accepted, d.rejected, d.auc, d.tau, d.sweetSpot, seconds])),
  );

  // Table 1: batch 1, per domain and policy.
  const table1Rows = data.table1.flatMap(({ domain, rows }) => {
    const ar = rows.find((r) => r.policy === 'ar')!;
    return rows.map((r) => {
      const wall = vsAr(r, ar);
      const mod = r.modelledThroughput !== undefined && ar.modelledThroughput ? r.modelledThroughput / ar.modelledThroughput : undefined;
      return { domain, row: r, wall, modelled: mod };
    });
  });
  files['table1.csv'] = csv(
    ['domain', 'policy', 'paper_method', 'mat', 'utilisation', 'throughput', 'speedup_vs_ar', 'speedup_min', 'speedup_max', 'modelled_speedup_vs_ar', 'steps', 'same_tokens_as_ar'],
    table1Rows.map(({ domain, row, wall, modelled: m }) => [domain, row.policy, PAPER_METHOD[row.policy] ?? '', row.metrics.meanAcceptedTokens, row.metrics.draftUtilisation, row.metrics.throughput, wall.median, wall.min, wall.max, m, row.metrics.steps, row.sameTokens]),
  );
  const shown = TABLE1_POLICIES.filter((p) => p !== 'ar');
  files['table1-speedup.svg'] = groupedBars({
    title: `Table 1: speedup over ar at batch 1 (${meta.clock === 'wall' ? 'wall clock' : 'wall clock; modelled in the table'})`,
    yLabel: 'throughput ÷ ar',
    categories: data.table1.map((t) => t.domain),
    series: shown.map((p) => ({ name: p, color: color(p), values: data.table1.map((t) => table1Rows.find((x) => x.domain === t.domain && x.row.policy === p)?.wall.median ?? NaN) })),
    reference: 1,
  });

  // Figs. 1 and 5: throughput against batch size.
  const batches = [...new Set(data.load.rows.map((r) => r.batch))].sort((a, b) => a - b);
  const loadSeries = (clock: 'wall' | 'modelled') =>
    LOAD_POLICIES.map((p) => ({
      name: p,
      color: color(p),
      points: batches.map((b) => {
        const r = data.load.rows.find((x) => x.batch === b && x.policy === p)!;
        return [b, clock === 'wall' ? r.metrics.throughput : (r.modelledThroughput ?? NaN)] as [number, number];
      }),
    }));
  files['fig1-throughput.svg'] = lineChart({ title: `Throughput against batch size (${data.load.domain}, wall clock)`, xLabel: 'batch size (log scale)', yLabel: 'tokens / s', series: loadSeries('wall'), logX: true });
  if (modelled) files['fig1-throughput-modelled.svg'] = lineChart({ title: `Throughput against batch size (${data.load.domain}, modelled)`, xLabel: 'batch size (log scale)', yLabel: 'tokens / modelled s', series: loadSeries('modelled'), logX: true });
  const loadTable = data.load.rows.map((r) => {
    const base = data.load.rows.find((x) => x.batch === r.batch && x.policy === 'static')!;
    const ratios = r.roundThroughputs.map((t, i) => t / base.roundThroughputs[i]);
    return { row: r, vsStatic: percentile(ratios, 50), min: Math.min(...ratios), max: Math.max(...ratios), modelledVsStatic: r.modelledThroughput !== undefined && base.modelledThroughput ? r.modelledThroughput / base.modelledThroughput : undefined };
  });
  files['throughput.csv'] = csv(
    ['domain', 'batch', 'kmax', 'policy', 'requests', 'throughput', 'vs_static', 'vs_static_min', 'vs_static_max', 'modelled_throughput', 'modelled_vs_static', 'mat', 'utilisation', 'verified_per_step', 'same_tokens_as_ar'],
    loadTable.map(({ row: r, vsStatic, min, max, modelledVsStatic }) => [data.load.domain, r.batch, r.kmax, r.policy, r.metrics.requests, r.metrics.throughput, vsStatic, min, max, r.modelledThroughput, modelledVsStatic, r.metrics.meanAcceptedTokens, r.metrics.draftUtilisation, r.metrics.verifiedTokensPerStep, r.sameTokens]),
  );

  // Where each load run's budget went, with the oracle and random gate bounds.
  // The ratio the throughput table reads on the explanation's clock: the modelled one when it is modelled.
  const explainClockRatio = (batch: number, policy: string) => {
    const t = loadTable.find((x) => x.row.batch === batch && x.row.policy === policy);
    if (data.explain?.clock !== 'wall') return t?.modelledVsStatic === undefined ? undefined : { ratio: t.modelledVsStatic, band: 0 };
    const control = data.load.rows.find((r) => r.batch === batch && r.policy === LOAD_CONTROL);
    const base = data.load.rows.find((r) => r.batch === batch && r.policy === 'static');
    return t === undefined ? undefined : { ratio: t.vsStatic, band: control && base ? aaHalfWidth(roundRatiosOf(control, base)) : NaN };
  };
  const explained = data.explain ? explainSection(data.explain, explainClockRatio, color) : null;
  if (explained) Object.assign(files, explained.files);

  // Fig. 4: per-request utilisation.
  const utilPolicies = shown.filter((p) => data.utilisation.some((u) => u.policy === p));
  files['fig4-utilisation.svg'] = boxPlots({
    title: 'Draft utilisation per request at batch 1 (all domains)',
    yLabel: 'accepted ÷ verified draft tokens',
    groups: utilPolicies.map((p) => ({ name: p, color: color(p), values: data.utilisation.filter((u) => u.policy === p).map((u) => u.utilisation) })),
    yMax: 1,
  });
  files['utilisation.csv'] = csv(['domain', 'policy', 'request', 'utilisation', 'verified_draft_tokens'], data.utilisation.map((u) => [u.domain, u.policy, u.request, u.utilisation, u.verified]));
  files['claims.csv'] = csv(['id', 'claim', 'source', 'clock', 'measured', 'uncertainty', 'paper', 'verdict', 'because'], claims.map((c) => [c.id, c.claim, c.source, c.clock, c.measured, c.uncertainty, c.paper, c.verdict, c.because]));

  // The hand-off to serving engines, from the first domain's calibration.
  const handOffs: ServingHandOff[] = data.calibrations.length > 0 && 'pair' in serving ? (['low', 'high'] as const).map((load) => servingHandOff(data.calibrations[0].profile, { load, pair: serving.pair })) : [];
  files['serving.txt'] = `${[`calibrated on ${data.calibrations[0]?.domain ?? 'nothing'}`, ...('refused' in serving ? [`no hand-off: ${serving.refused}`] : handOffs.map(formatServingHandOff))].join('\n')}\n`;

  files['report.json'] = `${JSON.stringify({ kind: 'echo-reproduction', meta, claims, data, serving: handOffs, paper: { table1: PAPER_TABLE1, highLoad: PAPER_HIGH_LOAD, figures: PAPER_FIGURES } }, null, 1)}\n`;
  files['report.html'] = html(data, claims, meta, files, { table1Rows, loadTable, utilPolicies, handOffs, modelled, explained });
  return files;
}

const h = escapeXml;

function table(header: readonly string[], rows: ReadonlyArray<ReadonlyArray<string>>, cls = ''): string {
  return `<table${cls ? ` class="${cls}"` : ''}><thead><tr>${header.map((c) => `<th>${h(c)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('')}</tbody></table>`;
}

function html(
  data: StudyData,
  claims: readonly Claim[],
  meta: ReportMeta,
  files: ReportFiles,
  parts: {
    table1Rows: Array<{ domain: string; row: SweepRow; wall: { median: number; min: number; max: number }; modelled?: number }>;
    loadTable: Array<{ row: SweepRow; vsStatic: number; min: number; max: number; modelledVsStatic?: number }>;
    utilPolicies: string[];
    handOffs: ServingHandOff[];
    modelled: boolean;
    explained: ExplainSection | null;
  },
): string {
  const verdictClass = (v: string) => (v === 'holds' ? 'holds' : v === 'does not hold' ? 'fails' : 'na');
  const claimRows = claims.map((c) => [`<b>${h(c.claim)}</b><br><small>${h(c.source)} · ${h(c.clock)}</small>`, h(c.measured), h(c.uncertainty), h(c.paper), `<span class="${verdictClass(c.verdict)}">${h(c.verdict)}</span><br><small>${h(c.because)}</small>`]);
  const paperTable1 = PAPER_TABLE1.map((r) => [h(r.model), h(r.method), ...PAPER_BENCHMARKS.map((b) => `${r.cells[b].mat.toFixed(2)} · ${r.cells[b].speedup.toFixed(2)}×`), `${r.averageSpeedup.toFixed(2)}×`]);
  const controls = (rows: SweepRow[], control: string, base: string) => {
    const c = rows.find((r) => r.policy === control);
    const b = rows.find((r) => r.policy === base);
    if (!c || !b) return '';
    const ratios = c.roundThroughputs.map((t, i) => t / b.roundThroughputs[i]);
    return `${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}`;
  };
  const greedyRows = [...data.table1.flatMap((t) => t.rows), ...data.load.rows];
  const lossless = greedyRows.every((r) => r.sameTokens !== false || r.divergence?.tie === true);
  // With every run lossless, an output that differs can only be a float tie.
  const someTies = greedyRows.some((r) => r.sameTokens === false);
  const meanAucs = data.calibrations.map((c) => `${c.domain}: ${c.profile.confidence}, sweet spots ${Object.entries(c.profile.taus).map(([d, t]) => `d${d} τ=${t}`).join(', ')} (calibrated in ${c.seconds.toFixed(1)} s)`);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ECHO reproduction: ${h(meta.date)}</title>
<style>
body{font-family:sans-serif;max-width:1180px;margin:24px auto;padding:0 16px;color:#222;line-height:1.4}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.holds{color:#1a7f37;font-weight:bold}.fails{color:#b3261e;font-weight:bold}.na{color:#7a5d00;font-weight:bold}
figure{margin:8px 0 20px}code,pre{background:#f6f6f6;padding:2px 4px;font-size:12px}pre{padding:8px;overflow-x:auto}.paper{background:#fbfaf4}
small{color:#555}
</style></head><body>
<h1>ECHO reproduction on ${h(meta.pair.target)}</h1>
<p>The paper's figures and tables regenerated on one draft/target pair, with each claim judged from the data. Made ${h(meta.date)} in ${(meta.seconds / 60).toFixed(1)} min${meta.quick ? ' (<b>quick</b>: fewer requests, rounds and batch sizes)' : ''}; clock: ${h(meta.clock)}.</p>
<pre>${h(meta.command)}</pre>
${table(['', ''], [
  ['draft · target', `${h(meta.pair.draft)} · ${h(meta.pair.target)}`],
  ['versions', h(Object.entries(meta.versions).map(([k, v]) => `${k} ${v}`).join(', '))],
  ['machine', h(`${meta.machine.cpu}, ${meta.machine.cores} cores, ${meta.machine.memoryGiB} GiB, ${meta.machine.platform}${meta.machine.threads ? `, target on ${meta.machine.threads} threads` : ''}`)],
  ['seeds', h(`runs ${meta.seeds.run} (greedy: outputs do not depend on it), bootstrap ${meta.seeds.bootstrap}`)],
  ['settings', h(Object.entries(meta.settings).map(([k, v]) => `${k} ${v}`).join(' · '))],
  ['phases', h(`calibration ${data.seconds.calibration.toFixed(0)} s, Table 1 ${data.seconds.table1.toFixed(0)} s, throughput against batch ${data.seconds.load.toFixed(0)} s`)],
  ['lossless', !lossless ? '<b>NOT LOSSLESS: some run emitted other tokens than ar (see the CSVs)</b>'
    : someTies ? 'every greedy run emitted the same tokens as ar except where the target’s two best tokens tie within float rounding'
    : 'every greedy run emitted the same tokens as ar'],
])}
<h2>Claims</h2>
<p>Each verdict is computed from this run's data: a ratio holds when it clears the A/A band (the baseline run again in the same rounds: how far two identical runs drift apart here); an AUC when it is above δ; a utilisation difference when its bootstrap interval excludes 0. The paper's number for the same comparison is beside it; it was measured on H100s with 8B–235B models, so compare directions, not magnitudes.</p>
${table(['claim', 'measured here', 'uncertainty', 'the paper', 'verdict'], claimRows)}
<h2>Figs. 2 and 6–9: confidence by depth</h2>
<p class="paper"><b>The paper:</b> ${h(PAPER_FIGURES.fig2)}</p>
<p>${h(meanAucs.join('; '))}</p>
${data.calibrations.map((c) => `<figure>${files[`fig2-densities-${c.domain}.svg`]}</figure>`).join('\n')}
<h2>Table 1: batch 1</h2>
<p class="paper"><b>The paper:</b> ${h(PAPER_FIGURES.table1)} Bundled domains are set beside ${h(Object.entries(DOMAIN_BENCHMARK).map(([d, b]) => `${d} → ${b}`).join(', '))}.</p>
<figure>${files['table1-speedup.svg']}</figure>
${table(
  ['domain', 'policy (paper)', 'MAT', 'utilisation', 'tok/s', 'speedup ÷ ar (rounds)', ...(parts.modelled ? ['modelled ÷ ar'] : []), 'steps'],
  parts.table1Rows.map(({ domain, row, wall, modelled }) => [h(domain), h(`${row.policy}${PAPER_METHOD[row.policy] ? ` (${PAPER_METHOD[row.policy]})` : ''}`), f(row.metrics.meanAcceptedTokens, 2), f(row.metrics.draftUtilisation, 2), f(row.metrics.throughput, 1), `${f(wall.median)} (${f(wall.min)}–${f(wall.max)})`, ...(parts.modelled ? [f(modelled)] : []), String(row.metrics.steps)]),
)}
<p>A/A control (${TABLE1_CONTROL} ÷ ar) per domain: ${h(data.table1.map((t) => `${t.domain} ${controls(t.rows, TABLE1_CONTROL, 'ar')}`).join(', '))}.</p>
<details class="paper"><summary>The paper's Table 1 (MAT · speedup per benchmark, average speedup)</summary>
${table(['model', 'method', ...PAPER_BENCHMARKS, 'average'], paperTable1)}</details>
<h2>Figs. 1 and 5: throughput against batch size</h2>
<p class="paper"><b>The paper:</b> ${h(PAPER_FIGURES.fig1)}</p>
<figure>${files['fig1-throughput.svg']}</figure>
${parts.modelled ? `<figure>${files['fig1-throughput-modelled.svg']}</figure>` : ''}
${table(
  ['batch', 'K_max', 'policy', 'tok/s', '÷ static (rounds)', ...(parts.modelled ? ['modelled ÷ static'] : []), 'MAT', 'utilisation', 'verified/step'],
  parts.loadTable.map(({ row, vsStatic, min, max, modelledVsStatic }) => [String(row.batch), String(row.kmax), h(row.policy), f(row.metrics.throughput, 1), `${f(vsStatic)} (${f(min)}–${f(max)})`, ...(parts.modelled ? [f(modelledVsStatic)] : []), f(row.metrics.meanAcceptedTokens, 2), f(row.metrics.draftUtilisation, 2), f(row.metrics.verifiedTokensPerStep, 1)]),
)}
<p>A/A control (${LOAD_CONTROL} ÷ static) per batch: ${h([...new Set(data.load.rows.map((r) => r.batch))].map((b) => `${b}: ${controls(data.load.rows.filter((r) => r.batch === b), LOAD_CONTROL, 'static')}`).join(', '))}.</p>
<details class="paper"><summary>The paper's high-load numbers (tokens/s at batch 256)</summary>
${table(['model', 'batch', 'policy', 'tokens/s', 'where'], PAPER_HIGH_LOAD.map((r) => [h(r.model), String(r.batch), h(r.policy), String(r.throughput), h(r.source)]))}</details>
${parts.explained ? parts.explained.html : ''}
<h2>Fig. 4: draft utilisation</h2>
<p class="paper"><b>The paper:</b> ${h(PAPER_FIGURES.fig4)}</p>
<figure>${files['fig4-utilisation.svg']}</figure>
${table(
  ['policy', 'requests', 'median', 'IQR (25–75 %)'],
  parts.utilPolicies.map((p) => {
    const xs = data.utilisation.filter((u) => u.policy === p).map((u) => u.utilisation);
    return [h(p), String(xs.length), f(percentile(xs, 50)), `${f(percentile(xs, 75) - percentile(xs, 25))} (${f(percentile(xs, 25))}–${f(percentile(xs, 75))})`];
  }),
)}
<h2>Hand-off to serving engines</h2>
<p>The first domain's calibration as the command lines SGLang (EAGLE3 for an EAGLE-3 head, STANDALONE for a separate draft model; with ECHO's threshold, and upstream without it) and vLLM (eagle3 or draft_model) take for this pair, each with the engine version it was checked against, and what each cannot express.</p>
<pre>${h(files['serving.txt'])}</pre>
<h2>Files</h2>
<p>${Object.keys(files).concat(['report.html']).map((n) => `<code>${h(n)}</code>`).join(' ')}</p>
</body></html>
`;
}
