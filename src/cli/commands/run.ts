// `echo-studio run`: one headless run of the speculative engine on a draft/target pair.
//   echo-studio run --policy eagle2 --batch 8 --kmax 64 --domain code --requests 16 \
//     --max-new-tokens 64 --temperature 0 --seed 0 [--out FILE] [--trace FILE] [--json]
// --json prints one summary object (the run's metrics); --out writes one JSONL line per request
// as it finishes (a killed run keeps those), put in workload order when the run ends.
import type { Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { checkOutputPaths, JsonLinesOutput, streamedOutput } from '../output-files.js';
import { availablePolicies, type FinishedRun, formatStepTime, loadHardwareProfile, modelFolders, type ModelledClock, type ModelledTime, prepare, profileMismatches, promptText, type RequestResult, type RunSetup, suggestKmax } from '../../engine/index.js';
import { defaultDraftPrecision, type RunConfig, type WeightPrecision } from '../../shared/config.js';
import { KNOBS } from '../../shared/knobs.js';
import { clockCosts, clockFromFlags, ignoredFlagNotes, priceProfileFromFlags, runConfigFromFlags, type RunFlags } from '../run-config.js';
import type { RunMetrics, StepTimeSplit } from '../../shared/events.js';
import { atBaselineStepCost, meanStepMs } from '../../shared/step-costs.js';
import { knobOption, knobOptions, withRuntimeOptions, withWorkloadOptions } from '../flags.js';

// Resolving a RunConfig into loaded models and a runner is shared with the studio's engine host.
export { BUNDLED_DRAFT, BUNDLED_TARGET, resolveModelDirs } from '../../engine/index.js';

export interface RunReport {
  config: RunConfig;
  draftDir: string;
  targetDir: string;
  metrics: RunMetrics;
  /** Share of step wall time spent outside onnxruntime's run() (the engine's own work). */
  engineOverhead: number;
  results: RequestResult[];
  /** The weight precision each model ran in: with a quantised target, the output is lossless with respect to it. */
  precision: { draft: WeightPrecision; target: WeightPrecision };
  /** Present with `--clock modelled`: the run's time on the modelled hardware. */
  modelled?: ModelledTime;
  /** echo/dense/fixed whose warm-up found no sweet spot: the run went ungated. */
  ungated?: boolean;
  /** With --compare-ar: ar's steps on the same workload, and this run's throughput over ar's had its steps cost ar's (atBaselineStepCost). */
  ar?: { steps: number; stepTime?: StepTimeSplit; atArStepCost: number };
}

export interface RunOptions {
  threads?: number;
  provider?: 'cpu' | 'cuda';
  draftPrecision?: WeightPrecision;
  /** Write the JSONL trace of the run here (in place when new, else beside it and renamed over it at the end). */
  trace?: string;
  /** Each request of the run (not of --compare-ar's ar) as it finishes, as an --out line. */
  onOutput?: (line: RequestOutput) => void;
  /** With trace: also record every draft expansion's top-k, so `trace what-if` can re-score the run. */
  recordCandidates?: boolean;
  /** Also run the workload under `ar` on the same pair and report the wall-time speedup. */
  compareAr?: boolean;
  /** Also time every step on this modelled clock (acceptance still comes from the real models). */
  clock?: ModelledClock;
  /** Price draft forwards at what one costs on this machine (`--draft-cost auto`). */
  measureDraftCost?: boolean;
  log?: (line: string) => void;
}

export async function executeRun(config: RunConfig, options: RunOptions = {}): Promise<RunReport> {
  // The trace goes in place when new, else beside it, renamed over it once the run ends.
  const traceOutput = options.trace ? streamedOutput(options.trace) : null;
  const run = await prepare(config, {
    threads: options.threads,
    provider: options.provider,
    draftPrecision: options.draftPrecision,
    measureDraftCost: options.measureDraftCost,
    log: options.log,
    trace: traceOutput?.writePath,
    recordCandidates: options.recordCandidates,
    clock: options.clock,
    // With --compare-ar, the same workload under ar beside it on the same loaded pair.
    compareAr: options.compareAr,
  });
  const { setup } = run;
  try {
    if (options.onOutput) run.on('requestFinished', (result) => options.onOutput?.(outputLine(result, setup)));
    let finished: FinishedRun;
    try {
      finished = await run.toEnd({ log: options.log });
    } catch (err) {
      run.end('error', { message: (err as Error).message });
      traceOutput?.commit();
      throw err;
    }
    const { main, ar, metrics } = finished;
    run.end('finished', { wallMs: main.summary.wallMs, speedupVsAr: metrics.speedupVsAr });
    traceOutput?.commit();
    const arSteps = ar ? { ar: { steps: ar.metrics.steps, stepTime: ar.metrics.stepTime, atArStepCost: atBaselineStepCost(main.metrics, ar.metrics) } } : {};
    const ungated = setup.gates?.source === 'ungated' ? { ungated: true } : {};
    const precision = { draft: setup.pair.draft.info.precision, target: setup.pair.target.info.precision };
    return { config, draftDir: setup.draftDir, targetDir: setup.targetDir, metrics, engineOverhead: main.engineOverhead, results: main.summary.results, precision, modelled: main.modelled, ...ungated, ...arSteps };
  } finally {
    await run.release();
  }
}

/**
 * The summary's line on weights and what the output is exact to: the target as it ran. A verified
 * row has the decoded row's logits bit for bit at every precision (docs/model-runtime.md, "Batch
 * invariance"), so a quantised target's run is lossless with respect to that quantised target.
 */
export function precisionLine(precision: RunReport['precision']): string {
  const what = precision.target === 'float32' ? 'as on disk' : 'its quantised weights, not the float32 model on disk';
  return `weights: target ${precision.target}, draft ${precision.draft} · lossless with respect to the ${precision.target} target (${what})`;
}

/** One --out line: the request's id, its prompt text, its tokens and their text, why it ended. */
export interface RequestOutput {
  id: string;
  prompt: string;
  tokens: number[];
  text: string;
  finish: RequestResult['finish'];
}

function outputLine(result: RequestResult, setup: RunSetup): RequestOutput {
  const tokenizer = setup.pair.tokenizer;
  const record = setup.records[result.index];
  const prompt = record && record.id === result.id ? promptText(record, tokenizer) : '';
  return { id: result.id, prompt, tokens: result.tokens, text: tokenizer.decode(result.tokens, { skipSpecialTokens: true }), finish: result.finish };
}


export function register(program: Command): void {
  const command = program
    .command('run')
    .description('run the speculative engine on a workload and report throughput, MAT and utilisation')
    .requiredOption('--policy <name>', `speculation policy (${availablePolicies().join(', ')})`);
  knobOption(command, 'batch', { defaulted: true });
  knobOption(command, 'kmax');
  withRuntimeOptions(withWorkloadOptions(command, KNOBS.requests.default));
  knobOptions(command, ['chainLength', 'shape', 'taus', 'tau', 'maxDepth', 'maxWidth', 'dddThreshold', 'verifyCost', 'draftCost', 'profile', 'confidence', 'cuts']);
  command
    .option('--out <file>', 'write one JSONL line per request as it finishes (id, prompt, tokens, text, finish), in workload order once the run ends')
    .option('--trace <file>', 'write the JSONL trace (header, one line per step, summary)')
    .option('--force', 'replace --out and --trace files that already exist (each is replaced only once the run ends)')
    .option('--record-candidates', 'with --trace: also record each draft expansion’s top-k, so `trace what-if` can re-score the run (larger file)')
    .option('--compare-ar', 'also run the workload under ar, the two taking turns step by step on one loaded pair, and report the wall-time speedup');
  knobOptions(command, ['clock', 'hw', 'hwProfile', 'priceProfile']);
  command
    .option('--json', 'print one JSON summary object instead of text')
    .action(runCommand);
}

/** `run`'s action: check the outputs, build the config from the flags, run, write --out, print the summary. */
async function runCommand(given: RunFlags): Promise<void> {
  // Before any work: an output that cannot be written, or would destroy a file, fails now.
  checkOutputPaths(
    [...(given.out ? [{ flag: '--out', path: given.out }] : []), ...(given.trace ? [{ flag: '--trace', path: given.trace }] : [])],
    {
      force: given.force,
      inputs: [
        given.prompts ? { flag: '--prompts', path: given.prompts } : undefined,
        given.profile ? { flag: '--profile', path: given.profile } : undefined,
        given.hwProfile ? { flag: '--hw-profile', path: given.hwProfile } : undefined,
        given.priceProfile ? { flag: '--price-profile', path: given.priceProfile } : undefined,
      ],
    },
  );
  const hwProfile = given.hwProfile ? loadHardwareProfile(given.hwProfile) : undefined;
  const clock = clockFromFlags(given, hwProfile);
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const costs = clockCosts(given, { clock, log, profile: hwProfile, priceProfile: priceProfileFromFlags(given) });
  const flags: RunFlags = {
    ...given,
    kmax: given.kmax ?? (costs.knee !== undefined ? suggestKmax({ kmax: costs.knee }, given.batch) : undefined),
    ...(costs.draftCost !== undefined ? { draftCost: costs.draftCost } : {}),
    ...(costs.verifyCost !== undefined ? { verifyCost: costs.verifyCost } : {}),
  };
  const config = runConfigFromFlags(flags);
  for (const note of ignoredFlagNotes(given)) log(note);
  if (hwProfile) {
    const draftPrecision = flags.draftPrecision ?? defaultDraftPrecision(flags.provider);
    for (const note of profileMismatches(hwProfile, { batch: config.batch, draftPrecision, targetPrecision: config.targetPrecision, draftWindow: flags.draftWindow, draftKind: config.draftKind, models: modelFolders(config) })) log(note);
  }
  // --out: one line per request as it finishes, so a killed run keeps what finished; at the
  // end the file is rewritten in workload order (the order it always had).
  const outputs = flags.out ? { file: new JsonLinesOutput(flags.out), lines: new Map<string, RequestOutput>() } : null;
  const onOutput = outputs
    ? (line: RequestOutput) => {
        outputs.lines.set(line.id, line);
        outputs.file.write(line);
      }
    : undefined;
  let report: RunReport;
  try {
    report = await executeRun(config, {
      threads: flags.threads,
      provider: flags.provider,
      draftPrecision: flags.draftPrecision,
      trace: flags.trace,
      recordCandidates: flags.recordCandidates,
      compareAr: flags.compareAr,
      clock,
      measureDraftCost: costs.measureDraftCost,
      onOutput,
      log,
    });
  } catch (err) {
    await outputs?.file.close();
    throw err;
  }
  if (outputs) {
    const inOrder = report.results.flatMap((r) => {
      const line = outputs.lines.get(r.id);
      return line ? [`${JSON.stringify(line)}\n`] : [];
    });
    await outputs.file.close((temporary) => writeFileSync(temporary, inOrder.join('')));
  }
  printRunReport(report, config, flags.json === true);
}

/** The run's summary on stdout: one JSON object with --json, else lines of text. */
function printRunReport(report: RunReport, config: RunConfig, json: boolean): void {
  const m = report.metrics;
  if (json) {
    process.stdout.write(
      JSON.stringify({
        ...m,
        engineOverhead: report.engineOverhead,
        ...(report.modelled ? { modelled: report.modelled } : {}),
        ...(report.ar ? { ar: report.ar } : {}),
        ...(report.ungated ? { ungated: true } : {}),
        config: report.config,
        draftDir: report.draftDir,
        targetDir: report.targetDir,
        precision: report.precision,
      }) + '\n',
    );
    return;
  }
  const fmt = (x: number, d = 2) => x.toFixed(d);
  process.stdout.write(
    [
      `policy ${m.policy}: ${m.requests} requests, ${m.generatedTokens} tokens in ${fmt(m.wallMs / 1000)} s over ${m.steps} steps`,
      precisionLine(report.precision),
      ...(report.ungated ? ['ungated: the warm-up found no sweet spot, so no depth was truncated by a τ_d'] : []),
      `throughput ${fmt(m.throughput, 1)} tok/s${m.decodeThroughput ? ` (decoding ${fmt(m.decodeThroughput, 1)} tok/s: prefill left out)` : ''} · MAT ${fmt(m.meanAcceptedTokens)} (bonus excluded) · acceptance length ${fmt(m.meanAcceptanceLength)}`,
      `draft utilisation ${fmt(m.draftUtilisation)} · verified tokens/step ${fmt(m.verifiedTokensPerStep, 1)} (K_max ${config.kmax}) · padding waste ${fmt(m.paddingWaste)}`,
      `time per output token p50 ${fmt(m.tpotP50Ms)} ms, p99 ${fmt(m.tpotP99Ms)} ms · engine overhead ${fmt(100 * report.engineOverhead, 1)}% of step time`,
      ...(m.stepTime ? [`per step: ${formatStepTime(m.stepTime)}`] : []),
      ...(m.speedupVsAr !== undefined ? [`wall-time speedup over ar on the same workload: ${fmt(m.speedupVsAr)}×`] : []),
      ...(report.ar?.stepTime && m.stepTime
        ? [
            `  ar took ${report.ar.steps} steps of ${fmt(meanStepMs(report.ar.stepTime))} ms to these ${m.steps} of ${fmt(meanStepMs(m.stepTime))} ms; at ar's step cost this run would be ${fmt(report.ar.atArStepCost)}× ar (what taking fewer steps buys, before what drafting costs)`,
          ]
        : []),
      ...(report.modelled
        ? [
            `modelled clock (${report.modelled.clock}): ${fmt(report.modelled.ms / 1000, 3)} s (draft ${fmt(report.modelled.draftMs / 1000, 3)} s, verify ${fmt(report.modelled.verifyMs / 1000, 3)} s) → ${fmt(report.modelled.throughput, 1)} tok/s, next to ${fmt(m.wallMs / 1000)} s wall`,
          ]
        : []),
      '',
    ].join('\n'),
  );
}
