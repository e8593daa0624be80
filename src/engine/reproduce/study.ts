// The paper's studies run on one loaded pair: per domain a calibration (Figs. 2, 6–9: per-depth
// confidence of accepted and rejected tokens, AUC, sweet spots, τ_d) and the batch-1 comparison of
// Table 1 (MAT and speedup over ar, with per-request draft utilisation for Fig. 4); then, on the
// first domain, throughput against batch size (Figs. 1 and 5). Every comparison is a sweep
// (runSweep: paired, interleaved rounds, greedy outputs checked identical) with an A/A control,
// the baseline run again, whose drift from 1 is the noise the study's ratios are read against.
import { calibratePair } from '../run/warmup.js';
import { profileGates, type EchoProfile } from '../calibrate/profile.js';
import type { ModelledClock } from '../cost/clock.js';
import type { VerifyCost } from '../policy/types.js';
import { runSweep, type SweepRow } from '../run/sweep.js';
import type { RunSetup } from '../run/session-run.js';
import type { WorkItem } from '../run/runner.js';
import type { StepEvent } from '../../shared/events.js';
import { SweepExplainer, type ExplanationRow } from './explain-capture.js';

/** Table 1's policies (chain = standard SD, static = EAGLE-3's tree) and its control, ar run again. */
export const TABLE1_POLICIES = ['ar', 'chain', 'static', 'eagle2', 'ddd', 'echo'] as const;
export const TABLE1_CONTROL = 'ar#2';
/** Figs. 1 and 5: throughput against batch size, and their control, static run again. */
export const LOAD_POLICIES = ['ar', 'static', 'echo', 'dense', 'fixed'] as const;
export const LOAD_CONTROL = 'static#2';

export interface DomainWorkload {
  domain: string;
  /** The runs' prompts, in order (tokenised). */
  runs: readonly WorkItem[];
  /** Prompts to calibrate on, apart from the runs' where the domain has enough. */
  calibration: readonly WorkItem[];
}

export interface StudyPlan {
  domains: readonly DomainWorkload[];
  /** Table 1: requests per domain at batch 1, and rounds. */
  table1: { requests: number; rounds: number };
  /** Figs. 1 and 5 on the first domain: batch sizes, requests at each, rounds. */
  load: { batches: readonly number[]; requests: (batch: number) => number; rounds: number };
  calibration: { depth: number; batch: number; maxNewTokens: number; delta: number };
  kmax: (batch: number) => number;
  /** Gated policies' draft price (a share of a target forward). */
  draftCost: number;
  /** Gated policies' verification price (the modelled device's, when the study runs on one). */
  verifyCost?: VerifyCost;
  /** One profile for every domain instead of calibrating each (`--profile`). */
  profile?: EchoProfile;
  clock?: ModelledClock;
}

export interface DomainCalibration {
  domain: string;
  profile: EchoProfile;
  seconds: number;
}

export interface RequestUtilisation {
  domain: string;
  policy: string;
  request: string;
  /** Accepted draft tokens over the draft tokens verified, over the request's steps. */
  utilisation: number;
  verified: number;
}

export interface Table1Domain {
  domain: string;
  rows: SweepRow[];
}

export type { ExplanationRow };

export interface StudyExplanations {
  domain: string;
  /** The clock the bounds are priced on: wall (verification moved by its fitted slope), or the modelled clock's label. */
  clock: string;
  /** Wall clock only: ms per verified token of the verification forward, fitted per batch size over every policy's steps. */
  verifySlopes?: Record<number, number>;
  rows: ExplanationRow[];
  /** The analysis' own time, apart from the runs it explains. */
  seconds: number;
}

export interface StudyData {
  calibrations: DomainCalibration[];
  table1: Table1Domain[];
  /** The load study's domain and its rows, every batch size. */
  load: { domain: string; rows: SweepRow[] };
  utilisation: RequestUtilisation[];
  /** Where each load run's budget went, with the oracle and random gate bounds (absent in reports from before it). */
  explain?: StudyExplanations;
  seconds: { calibration: number; table1: number; load: number };
}

/** Generated tokens the study plans to run, per phase (for an estimate of its duration). */
export function plannedWork(plan: StudyPlan, maxNewTokens: number): { calibration: number; table1: number; load: { batch: number; tokens: number }[] } {
  const calibration = plan.profile ? 0 : plan.domains.reduce((s, d) => s + 2 * d.calibration.length * plan.calibration.maxNewTokens, 0);
  const table1 = plan.domains.length * (TABLE1_POLICIES.length + 1) * plan.table1.rounds * plan.table1.requests * maxNewTokens;
  const load = plan.load.batches.map((batch) => ({ batch, tokens: (LOAD_POLICIES.length + 1) * plan.load.rounds * plan.load.requests(batch) * maxNewTokens }));
  return { calibration, table1, load };
}

/** Per request of a run: accepted and verified draft tokens, from its steps. */
class UtilisationCounter {
  private readonly perRequest = new Map<string, { accepted: number; verified: number }>();
  add(event: StepEvent): void {
    for (const r of event.requests) {
      const c = this.perRequest.get(r.requestId) ?? { accepted: 0, verified: 0 };
      c.accepted += r.accepted.length;
      for (const n of r.nodes) if (n.depth >= 0 && n.verified) c.verified++;
      this.perRequest.set(r.requestId, c);
    }
  }
  rows(domain: string, policy: string): RequestUtilisation[] {
    return [...this.perRequest].filter(([, c]) => c.verified > 0).map(([request, c]) => ({ domain, policy, request, utilisation: c.accepted / c.verified, verified: c.verified }));
  }
}

/**
 * Runs the studies on a setup loaded for the largest batch × every load entry (KV slots) and rows
 * long enough for every domain's prompts. `log` hears a line per phase and per finished run.
 */
export async function runStudy(setup: RunSetup, plan: StudyPlan, log: (line: string) => void = () => {}): Promise<StudyData> {
  if (plan.domains.length === 0) throw new Error('a study needs at least one domain');
  const { pair } = setup;
  const started = performance.now();
  const calibrations: DomainCalibration[] = [];
  for (const [i, d] of plan.domains.entries()) {
    if (plan.profile) {
      calibrations.push({ domain: d.domain, profile: plan.profile, seconds: 0 });
      continue;
    }
    log(`[calibration ${i + 1}/${plan.domains.length}] ${d.domain}: ${d.calibration.length} prompts, ${plan.calibration.maxNewTokens} tokens each, depths 0–${plan.calibration.depth - 1}`);
    const t = performance.now();
    const profile = await calibratePair({
      target: pair.target,
      draft: pair.draft,
      workload: d.calibration.map((w, k) => ({ id: `cal-${k}`, promptTokens: w.promptTokens })),
      eosTokenIds: pair.target.info.eosTokenIds,
      maxLength: setup.maxLength,
      depth: plan.calibration.depth,
      batch: Math.min(plan.calibration.batch, pair.target.capacity, pair.draft.capacity),
      maxNewTokens: plan.calibration.maxNewTokens,
      delta: plan.calibration.delta,
      models: { draft: setup.draftDir, target: setup.targetDir },
      domain: d.domain,
      keep: 'auto',
    }).catch((err: Error) => {
      throw new Error(`${d.domain}: ${err.message}; or give --profile FILE (from \`echo-studio calibrate\`) for every domain`);
    });
    calibrations.push({ domain: d.domain, profile, seconds: (performance.now() - t) / 1000 });
  }
  const calibrated = performance.now();

  // A domain's setup: its prompts and its gates, on the one loaded pair.
  const domainSetup = (d: DomainWorkload, requests: number, profile: EchoProfile): RunSetup => {
    const gates = { ...profileGates(profile), source: 'profile' as const, profile };
    return { ...setup, config: { ...setup.config, confidence: gates.confidence, draftCost: plan.draftCost, ...(plan.verifyCost ? { verifyCost: plan.verifyCost } : {}) }, workload: repeatTo(d.runs, requests), gates };
  };

  const utilisation: RequestUtilisation[] = [];
  const table1: Table1Domain[] = [];
  for (const [i, d] of plan.domains.entries()) {
    log(`[table 1, ${i + 1}/${plan.domains.length}] ${d.domain}: batch 1, ${plan.table1.requests} requests, ${plan.table1.rounds} rounds`);
    const counters = new Map<string, UtilisationCounter>();
    const rows = await runSweep(domainSetup(d, plan.table1.requests, calibrations[i].profile), {
      policies: [...TABLE1_POLICIES, TABLE1_CONTROL],
      batches: [1],
      kmax: plan.kmax,
      rounds: plan.table1.rounds,
      interleave: 'steps',
      clock: plan.clock,
      log: (line) => log(`  ${d.domain} ${line}`),
      onStep: (run, event) => {
        if (run.round !== 0) return; // greedy rounds repeat the same steps: one round says it all
        let counter = counters.get(run.entry);
        if (!counter) counters.set(run.entry, (counter = new UtilisationCounter()));
        counter.add(event);
      },
    });
    for (const [policy, counter] of counters) if (!policy.includes('#')) utilisation.push(...counter.rows(d.domain, policy));
    table1.push({ domain: d.domain, rows });
  }
  const tabled = performance.now();

  const first = plan.domains[0];
  log(`[throughput against batch size] ${first.domain}: batches ${plan.load.batches.join(', ')}, ${plan.load.rounds} rounds`);
  const loadRows: SweepRow[] = [];
  const explanations: StudyExplanations = { domain: first.domain, clock: plan.clock ? plan.clock.label : 'wall', rows: [], seconds: 0 };
  const explainer = new SweepExplainer({ maxNewTokens: setup.config.maxNewTokens, kmax: plan.kmax, clock: plan.clock, skip: (entry) => entry === LOAD_CONTROL });
  for (const batch of plan.load.batches) {
    const rows = await runSweep(domainSetup(first, plan.load.requests(batch), calibrations[0].profile), {
      policies: [...LOAD_POLICIES, LOAD_CONTROL],
      batches: [batch],
      kmax: plan.kmax,
      rounds: plan.load.rounds,
      interleave: 'steps',
      clock: plan.clock,
      log: (line) => log(`  ${first.domain} ${line}`),
      ...explainer.hooks(),
    });
    loadRows.push(...rows);
    const explained = performance.now();
    explanations.rows.push(...explainer.explain(batch));
    explanations.seconds += (performance.now() - explained) / 1000;
  }
  if (!plan.clock) explanations.verifySlopes = explainer.verifySlopes;
  const done = performance.now();
  return {
    calibrations,
    table1,
    load: { domain: first.domain, rows: loadRows },
    utilisation,
    explain: explanations,
    seconds: { calibration: (calibrated - started) / 1000, table1: (tabled - calibrated) / 1000, load: (done - tabled) / 1000 },
  };
}

/** The first `count` items, repeating the list when it is shorter (each repeat its own id). */
export function repeatTo(items: readonly WorkItem[], count: number): WorkItem[] {
  if (items.length === 0) throw new Error('no prompts to run');
  return Array.from({ length: count }, (_, k) => {
    const item = items[k % items.length];
    return k < items.length ? item : { ...item, id: `${item.id}~${Math.floor(k / items.length)}` };
  });
}
