// `echo-studio trace summary IN [--json]`: a run's metrics from its trace file alone.
// `echo-studio trace export IN --format parquet|perfetto|csv --out PATH`: the trace for other tools.
// `echo-studio trace what-if IN [--kmax N] [--taus 0:0.2,5:0.35] …`: re-score a greedy run.
// `echo-studio trace compare RUN BASE [--json]`: one run against another, steps and step cost.
import { Option, type Command } from 'commander';
import { computeRunMetrics, formatStepTime, readTraceStreaming, traceMetrics, type RequestMetrics, rescoreTrace, type TraceContents, type TraceLineError, type WhatIfResult, type WhatIfSettings } from '../../engine/index.js';
import type { DepthHistogram, RunMetrics } from '../../shared/events.js';
import type { TraceHeader } from '../../shared/trace-schema.js';
import { compareRuns, type RunComparison } from '../../shared/step-costs.js';
import { formatAttentionWindow, type AttentionWindow, type WeightPrecision } from '../../shared/config.js';
import { knobOption, parseDraftCost } from '../flags.js';
import { KNOBS, type KnobName } from '../../shared/knobs.js';
import { checkOutputPaths, EXPORT_FORMATS, traceExportPaths, writeTraceExport, type ExportFormat } from '../output-files.js';
export { parseTaus } from '../flags.js';

/** What `trace what-if` re-scores a run under, as the run's own knobs (its draft cost: below). */
const WHAT_IF_KNOBS = ['kmax', 'taus', 'tau', 'maxDepth', 'maxWidth', 'chainLength'] as const satisfies readonly KnobName[];
import { DEFAULT_PORT, parsePort, serveStudio } from './serve.js';

export { EXPORT_FORMATS, type ExportFormat } from '../output-files.js';

export interface TraceSummaryReport {
  file: string;
  header: Pick<TraceHeader, 'createdAt' | 'writer' | 'config' | 'hardware' | 'recordCandidates'>;
  /** How the draft ran: its weights' precision and attention window, when not as on disk and whole. */
  draft: { precision?: WeightPrecision; window?: AttentionWindow };
  /** The target's weights' precision, when the trace records it (float32 unless the run quantised it). */
  target: { precision?: WeightPrecision };
  /** The run wrote its summary line: it ended (finished, stopped or failed) rather than crashed. */
  ended: boolean;
  endReason?: 'finished' | 'stopped' | 'error';
  /** Recomputed from the step lines; equals the summary line's metrics for an intact file. */
  metrics: RunMetrics;
  histograms: DepthHistogram[];
  /** Per-request acceptance and time per output token. */
  requests: RequestMetrics[];
  /** A last line cut short, when the file has one: the metrics cover the steps before it. */
  error?: TraceLineError;
  /** Bad lines in the middle, skipped: the metrics cover every valid step around them. */
  skipped?: TraceLineError[];
}

/** Read a trace and compute its metrics from the steps, whatever state the file is in. */
export async function summariseTrace(file: string): Promise<TraceSummaryReport> {
  const trace = await readTraceStreaming(file);
  // Every step read: the summary line, when the run wrote one, gives its wall clock and speedup.
  const { metrics, histograms, requests } = traceMetrics(trace.steps, { policy: trace.header.config.policy, end: trace.summary });
  const { createdAt, writer, config, hardware, recordCandidates } = trace.header;
  const { precision, window } = trace.header.models.draft;
  const targetPrecision = trace.header.models.target.precision;
  return {
    file,
    header: { createdAt, writer, config, hardware, recordCandidates },
    draft: { ...(precision ? { precision } : {}), ...(window ? { window } : {}) },
    target: targetPrecision ? { precision: targetPrecision } : {},
    ended: trace.summary !== undefined,
    ...(trace.summary ? { endReason: trace.summary.reason } : {}),
    metrics,
    histograms,
    requests,
    ...(trace.error ? { error: trace.error } : {}),
    ...(trace.skipped ? { skipped: trace.skipped } : {}),
  };
}

/**
 * Export a trace file; returns the paths written. A bad line exports the steps before it. Every
 * output is checked before the trace is read: never the trace itself, an existing file only with `force`.
 */
export async function exportTraceFile(file: string, format: ExportFormat, out: string, options: { force?: boolean } = {}): Promise<{ written: string[]; trace: TraceContents }> {
  checkOutputPaths(
    traceExportPaths(format, out).map((path) => ({ flag: '--out', path })),
    { force: options.force, inputs: [{ flag: 'the trace file', path: file }] },
  );
  const trace = await readTraceStreaming(file);
  return { written: await writeTraceExport(trace, format, out), trace };
}

const fixed = (x: number, digits = 3) => (Number.isFinite(x) ? x.toFixed(digits) : String(x));

export function formatSummary(r: TraceSummaryReport): string {
  const m = r.metrics;
  const c = r.header.config;
  const state = r.error ? `cut at line ${r.error.line}` : r.ended ? `ended: ${r.endReason}` : 'no summary line (run did not end cleanly)';
  const draft = r.draft;
  const draftNotes = [
    ...(draft.precision && draft.precision !== 'float32' ? [`${draft.precision} weights`] : []),
    ...(draft.window ? [`attention window ${formatAttentionWindow(draft.window)} (sink:recent rows)`] : []),
  ];
  const unverified = r.histograms.flatMap((h) => {
    const n = (h.unverified ?? []).reduce((a, b) => a + b, 0);
    return n > 0 ? [`d${h.depth} ${n}`] : [];
  });
  const rows: [string, string][] = [
    ['policy', `${c.policy}  batch ${c.batch}  K_max ${c.kmax}  temperature ${c.temperature}`],
    ...(draftNotes.length > 0 ? ([['draft', draftNotes.join(' · ')]] as [string, string][]) : []),
    ...(r.target.precision && r.target.precision !== 'float32'
      ? ([['target', `${r.target.precision} weights (weight-only quantised): lossless with respect to them, not to the float32 model`]] as [string, string][])
      : []),
    ['steps / requests', `${m.steps} / ${m.requests}`],
    ['generated tokens', `${m.generatedTokens} in ${fixed(m.wallMs / 1000)} s`],
    ['throughput', `${fixed(m.throughput, 1)} tok/s`],
    ...(m.decodeThroughput !== undefined ? ([['decode throughput', `${fixed(m.decodeThroughput, 1)} tok/s (prefill left out)`]] as [string, string][]) : []),
    ...(m.speedupVsAr !== undefined ? ([['speedup vs ar', `${fixed(m.speedupVsAr, 2)}x`]] as [string, string][]) : []),
    ['mean accepted tokens', `${fixed(m.meanAcceptedTokens)} per request-step (bonus excluded)`],
    ['mean acceptance length', `${fixed(m.meanAcceptanceLength)} (accepted + bonus)`],
    ['draft utilisation', fixed(m.draftUtilisation)],
    ['verified tokens / step', fixed(m.verifiedTokensPerStep, 2)],
    ['acceptance per position', m.acceptancePerPosition.map((x) => fixed(x, 2)).join(' ') || '-'],
    ['padding waste', fixed(m.paddingWaste)],
    ['TPOT p50 / p99', `${fixed(m.tpotP50Ms, 2)} / ${fixed(m.tpotP99Ms, 2)} ms`],
    ...(m.stepTime ? ([['time per step', formatStepTime(m.stepTime)]] as [string, string][]) : []),
    ['confidence AUC by depth', r.histograms.map((h) => `d${h.depth} ${h.auc === null ? '-' : fixed(h.auc, 2)}`).join('  ') || '-'],
    ...(unverified.length > 0 ? ([['unverified layers', `${unverified.join('  ')} (never verified: no outcome, not in the AUC)`]] as [string, string][]) : []),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return [`${r.file}  (${state}, written ${r.header.createdAt} by ${r.header.writer})`, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join('\n');
}

export interface TraceComparison {
  run: TraceSummaryReport;
  base: TraceSummaryReport;
  comparison: RunComparison;
  /** Why the two may not compare like for like (other workload, other machine), one line each. */
  caveats: string[];
}

/** Two traces' metrics and the first against the second (compareRuns). */
export async function compareTraces(runFile: string, baseFile: string): Promise<TraceComparison> {
  const [run, base] = [await summariseTrace(runFile), await summariseTrace(baseFile)];
  const caveats: string[] = [];
  const work = (r: TraceSummaryReport) => `${r.metrics.requests} requests, ${r.metrics.generatedTokens} tokens`;
  if (work(run) !== work(base)) caveats.push(`different work (${work(run)} against ${work(base)}): only throughput compares`);
  const machine = (r: TraceSummaryReport) => JSON.stringify(r.header.hardware ?? null);
  if (machine(run) !== machine(base)) caveats.push('recorded on different hardware or settings (the headers differ): the wall clocks do not compare');
  for (const r of [run, base]) if (r.error) caveats.push(`${r.file}: ${r.error.message}; its metrics cover the steps before it`);
  return { run, base, comparison: compareRuns(run.metrics, base.metrics), caveats };
}

export function formatComparison(c: TraceComparison): string {
  const name = (r: TraceSummaryReport) => `${r.header.config.policy} (${r.file})`;
  const lines = [`${name(c.run)} against ${name(c.base)}`];
  for (const r of [c.run, c.base]) {
    const m = r.metrics;
    lines.push(`  ${r.header.config.policy.padEnd(8)} ${fixed(m.throughput, 1).padStart(9)} tok/s  ${String(m.steps).padStart(6)} steps  ${m.stepTime ? formatStepTime(m.stepTime) : '-'}`);
  }
  const x = c.comparison;
  lines.push(`  throughput ${fixed(x.throughput)}x`);
  if (x.steps) {
    lines.push(`  steps ${x.steps.run} to ${x.steps.base}, each ${fixed(x.steps.stepTime)}x the time; at ${c.base.header.config.policy}'s step cost ${fixed(x.steps.sched)}x (its number of steps alone)`);
  }
  for (const caveat of c.caveats) lines.push(`  note: ${caveat}`);
  return lines.join('\n');
}



export interface WhatIfReport {
  file: string;
  recorded: Pick<RunMetrics, 'meanAcceptedTokens' | 'meanAcceptanceLength' | 'draftUtilisation' | 'acceptancePerPosition' | 'verifiedTokensPerStep'>;
  whatIf: WhatIfResult;
}

export async function whatIfTrace(file: string, settings: WhatIfSettings): Promise<WhatIfReport & { error?: TraceLineError; skipped?: TraceLineError[] }> {
  const trace = await readTraceStreaming(file);
  const { metrics } = computeRunMetrics(trace.steps, { policy: trace.header.config.policy });
  const { meanAcceptedTokens, meanAcceptanceLength, draftUtilisation, acceptancePerPosition, verifiedTokensPerStep } = metrics;
  return {
    file,
    recorded: { meanAcceptedTokens, meanAcceptanceLength, draftUtilisation, acceptancePerPosition, verifiedTokensPerStep },
    whatIf: rescoreTrace(trace, settings),
    ...(trace.error ? { error: trace.error } : {}),
    ...(trace.skipped ? { skipped: trace.skipped } : {}),
  };
}

export function formatWhatIf(r: WhatIfReport): string {
  const w = r.whatIf;
  const rows: [string, string, string][] = [
    ['mean accepted tokens', fixed(r.recorded.meanAcceptedTokens), fixed(w.metrics.meanAcceptedTokens)],
    ['mean acceptance length', fixed(r.recorded.meanAcceptanceLength), fixed(w.metrics.meanAcceptanceLength)],
    ['draft utilisation', fixed(r.recorded.draftUtilisation), fixed(w.metrics.draftUtilisation)],
    ['verified tokens / step', fixed(r.recorded.verifiedTokensPerStep, 2), fixed(w.metrics.verifiedTokensPerStep, 2)],
    [
      'acceptance per position',
      r.recorded.acceptancePerPosition.map((x) => fixed(x, 2)).join(' ') || '-',
      w.metrics.acceptancePerPosition.map((x) => fixed(x, 2)).join(' ') || '-',
    ],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const col = Math.max('recorded'.length, ...rows.map(([, a]) => a.length));
  const undecidedSteps = w.steps.filter((s) => !s.decided);
  const firstReason = undecidedSteps[0]?.reason ?? w.steps.flatMap((s) => s.requests).find((q) => !q.decided)?.reason;
  return [
    `${r.file}  what-if ${w.policy} ${JSON.stringify(w.settings)}`,
    `  ${''.padEnd(width)}  ${'recorded'.padEnd(col)}  what-if`,
    ...rows.map(([k, a, b]) => `  ${k.padEnd(width)}  ${a.padEnd(col)}  ${b}`),
    `  decided: ${w.decidedSteps}/${w.steps.length} steps, ${w.decidedRequestSteps}/${w.decidedRequestSteps + w.undecidedRequestSteps} request-steps of those` +
      (firstReason ? `\n  first undecided: ${firstReason}` : ''),
  ].join('\n');
}

function warnPartial(file: string, error: TraceLineError | undefined, steps: number, skipped: readonly TraceLineError[] = []): void {
  for (const bad of skipped) process.stderr.write(`echo-studio: warning: ${file}: skipped ${bad.message}; read on past it\n`);
  if (error) process.stderr.write(`echo-studio: warning: ${file}: ${error.message}; using the ${steps} steps before it\n`);
}

export function register(program: Command): void {
  const trace = program.command('trace').description('read, summarise and export trace files (JSON Lines)');

  trace
    .command('summary')
    .description("the run's metrics, computed from the trace file alone")
    .argument('<in>', 'trace file (.jsonl)')
    .option('--json', 'print the report as JSON')
    .action(async (file: string, options: { json?: boolean }) => {
      const report = await summariseTrace(file);
      warnPartial(file, report.error, report.metrics.steps, report.skipped);
      process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatSummary(report)}\n`);
    });

  trace
    .command('export')
    .description('export a trace to Parquet tables (OUT.steps/.requests/.nodes/.gates.parquet), Perfetto JSON or CSV')
    .argument('<in>', 'trace file (.jsonl)')
    .addOption(new Option('--format <format>', 'output format').choices(EXPORT_FORMATS).makeOptionMandatory())
    .requiredOption('--out <path>', 'output file; for parquet the base name of the table files')
    .option('--force', 'replace output files that already exist')
    .action(async (file: string, options: { format: ExportFormat; out: string; force?: boolean }) => {
      const { written, trace: contents } = await exportTraceFile(file, options.format, options.out, { force: options.force });
      warnPartial(file, contents.error, contents.steps.length, contents.skipped);
      process.stdout.write(`${written.join('\n')}\n`);
    });

  trace
    .command('replay')
    .description('show a trace in the studio, in a browser: starts the web host with the trace loaded')
    .argument('<in>', 'trace file (.jsonl)')
    .option('-p, --port <n>', 'port to listen on (0 picks a free one)', parsePort, DEFAULT_PORT)
    .action(async (file: string, options: { port: number }) => {
      // Check the file here, so a bad one fails with its reason instead of an empty studio.
      const contents = await readTraceStreaming(file);
      warnPartial(file, contents.error, contents.steps.length, contents.skipped);
      await serveStudio({ port: options.port, host: '127.0.0.1', replay: file });
    });

  trace
    .command('compare')
    .description('one run against another from their trace files: throughput, and whether from fewer steps or cheaper ones')
    .argument('<run>', 'trace file of the run (.jsonl)')
    .argument('<base>', 'trace file of the run to compare it with (.jsonl)')
    .option('--json', 'print the report as JSON')
    .action(async (runFile: string, baseFile: string, options: { json?: boolean }) => {
      const report = await compareTraces(runFile, baseFile);
      process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatComparison(report)}\n`);
    });

  const whatIf = trace
    .command('what-if')
    .description('re-score a greedy run recorded with candidate expansions under other settings, without the models')
    .argument('<in>', 'trace file (.jsonl) recorded with candidate expansions');
  // The settings it re-scores under are the run's knobs, each absent = what the run recorded.
  for (const name of WHAT_IF_KNOBS) knobOption(whatIf, name, { defaultSaid: "the recorded run's" });
  // A share only: `auto` (measure on this machine) has no models to measure here.
  whatIf
    .option(`${KNOBS.draftCost.flag.split(' ')[0]} <share>`, "echo/dense/fixed: price each draft layer at this share of a target forward (0: no price); default the run's", (value: string) => parseDraftCost(value))
    .option('--json', 'print the report as JSON')
    .action(async (file: string, options: WhatIfSettings & { json?: boolean }) => {
      const { json, ...settings } = options;
      const report = await whatIfTrace(file, settings);
      warnPartial(file, report.error, report.whatIf.steps.length, report.skipped);
      process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : `${formatWhatIf(report)}\n`);
    });
}
