// The run panel: model pair, prompts, policy and budget; start, pause, one step, stop. While a
// run is live, the knobs (K_max, batch, τ) apply between steps through knobs.set, no restart.
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { ConfidenceSignalSchema, isGatedPolicy, kmaxProblem, KnobsSchema, parseAttentionWindow, parseTauList, POLICY_NAMES, RunConfigSchema, WEIGHT_PRECISIONS, type AttentionWindow, type ConfidenceSignal, type Knobs, type RunConfig, type WeightPrecision } from '../../shared/config.js';
import type { BundledModel, EngineKnobsEvent } from '../../shared/messages.js';
import { defaultKmax, KNOBS } from '../../shared/knobs.js';
import { suggestKmax } from '../../engine/cost/knee.js';
import { clockKnee, clockName, clockPricing } from '../studio/clock.js';
import type { KneeSuggestion } from '../studio/store.js';
import { plural } from '../studio/tokens.js';
import { useSend, useStudio, useStudioStore } from './StudioContext.js';
import { Field, ModelPairFieldset, PromptsFieldset, RunButtons, SamplingFieldset, type FormInput } from './RunFieldsets.js';

/** The run config's numbers the form holds as typed text (RunConfigSchema checks them on start). */
type TextSettings = Extract<keyof RunConfig, 'batch' | 'kmax' | 'requests' | 'maxNewTokens' | 'temperature' | 'seed' | 'tau'>;

/** The Run panel's fields: the run config's settings as the form edits them. */
export interface RunForm extends Record<TextSettings, string> {
  /** 'bundled-head': the bundled target with its demo EAGLE-3 head as the draft. */
  modelSource: 'bundled' | 'bundled-head' | 'folders';
  draftDir: string;
  targetDir: string;
  promptSource: 'domain' | 'file';
  domain: string;
  promptsFile: string;
  policy: RunConfig['policy'];
  /**
   * Per-depth τ as "depth:τ" pairs, e.g. "0:0.2, 2:0.35"; empty: the engine calibrates them on a
   * warm-up over the first prompts before the run (as the command line does); "none": no gates.
   */
  taus: string;
  /**
   * What the τ of echo / dense / fixed are compared with; 'auto': the signal a warm-up calibration
   * finds separates accepted from rejected better (as the command line does), path-prob with τ_d given.
   */
  confidence: NonNullable<RunConfig['confidence']> | 'auto';
  /** The draft's attention sinks and recent window as "sink:recent"; empty = its whole past. */
  draftWindow: string;
  /** The target's weights: float32 (as on disk) or weight-only int8 / int4. */
  targetPrecision: WeightPrecision;
}

export const DEFAULT_FORM: RunForm = {
  modelSource: 'bundled',
  draftDir: '',
  targetDir: '',
  promptSource: 'domain',
  domain: KNOBS.domain.default,
  promptsFile: '',
  policy: KNOBS.policy.studio,
  batch: String(KNOBS.batch.studio),
  kmax: String(defaultKmax(KNOBS.batch.studio)),
  requests: String(KNOBS.requests.studio),
  maxNewTokens: String(KNOBS.maxNewTokens.default),
  temperature: String(KNOBS.temperature.default),
  seed: String(KNOBS.seed.studio),
  taus: '',
  tau: String(KNOBS.tau.studio),
  confidence: 'auto',
  draftWindow: '',
  targetPrecision: KNOBS.targetPrecision.studio,
};


const SIGNAL_LABELS: Record<ConfidenceSignal | 'auto', string> = {
  auto: 'the better separating one (calibration picks)',
  'path-prob': "path probability (the paper's)",
  'path-margin': 'margin over the runner-up',
};
// A stable empty list: a fresh [] per read would make the store selector loop forever.
const NO_MODELS: readonly BundledModel[] = [];
const NO_DOMAINS: readonly string[] = [];
// Until the engine host's status names the registered policies, the built-in ones.
const BUILT_IN_POLICIES: readonly string[] = POLICY_NAMES;

export type FieldErrors = Partial<Record<keyof RunForm | 'form', string>>;

/**
 * The τ field in the one τ grammar (parseTauList): "0:0.2, 2:0.35" → {"0": 0.2, "2": 0.35};
 * "none" → {} (no gates); empty → undefined (calibrate first); a string describing the problem when malformed.
 */
export function parseTaus(text: string): Record<string, number> | undefined | string {
  if (text.trim() === '') return undefined;
  const parsed = parseTauList(text);
  if ('bad' in parsed && parsed.repeats !== undefined) return `depth ${parsed.repeats} is given twice ("${parsed.bad}"); give each depth one τ`;
  return 'bad' in parsed ? `"${parsed.bad}" is not depth:τ (e.g. 2:0.35), "none" or empty` : parsed.taus;
}

/** "4:64" → { sink: 4, recent: 64 }; empty → undefined (the whole past); a string describing the problem when malformed. */
export function parseDraftWindow(text: string): AttentionWindow | undefined | string {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  // A form may space the colon out; the command line's form has none.
  return parseAttentionWindow(trimmed.replace(/\s*:\s*/, ':')) ?? `"${trimmed}" is not sink:recent rows (e.g. 4:64), or empty for the whole past`;
}

const toNumber = (text: string): number => (text.trim() === '' ? Number.NaN : Number(text));

/** Builds a RunConfig from the form, or the errors to show next to each field. */
export function formToConfig(form: RunForm): { config: RunConfig } | { errors: FieldErrors } {
  const errors: FieldErrors = {};
  const taus = parseTaus(form.taus);
  if (typeof taus === 'string') errors.taus = taus;
  const draftWindow = form.policy === 'ar' ? undefined : parseDraftWindow(form.draftWindow);
  if (typeof draftWindow === 'string') errors.draftWindow = draftWindow;
  const candidate = {
    ...(form.modelSource === 'folders' ? { draftDir: form.draftDir.trim() || undefined, targetDir: form.targetDir.trim() || undefined } : {}),
    ...(form.modelSource === 'bundled-head' ? { draftKind: 'head' as const } : {}),
    ...(form.promptSource === 'domain' ? { domain: form.domain.trim() || undefined } : { promptsFile: form.promptsFile.trim() || undefined }),
    policy: form.policy,
    batch: toNumber(form.batch),
    kmax: toNumber(form.kmax),
    requests: toNumber(form.requests),
    maxNewTokens: toNumber(form.maxNewTokens),
    temperature: toNumber(form.temperature),
    seed: toNumber(form.seed),
    ...((form.policy === 'echo' || form.policy === 'dense') && typeof taus === 'object' ? { taus } : {}),
    ...(form.policy === 'fixed' ? { tau: toNumber(form.tau) } : {}),
    ...(isGatedPolicy(form.policy) && form.confidence !== 'auto' ? { confidence: form.confidence } : {}),
    ...(typeof draftWindow === 'object' ? { draftWindow } : {}),
    ...(form.targetPrecision !== 'float32' ? { targetPrecision: form.targetPrecision } : {}),
  };
  if (form.modelSource === 'folders' && (form.draftDir.trim() === '' || form.targetDir.trim() === '')) {
    errors.draftDir = 'choose both the draft and the target folder';
  }
  if (form.promptSource === 'file' && form.promptsFile.trim() === '') errors.promptsFile = 'give a prompts file';
  const parsed = RunConfigSchema.safeParse(candidate);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const key = (issue.path[0] ?? 'form') as keyof FieldErrors;
      errors[key] ??= issue.message;
    }
  }
  if (Object.keys(errors).length > 0 || !parsed.success) return { errors };
  return { config: parsed.data };
}

/** τ_d as the form writes them: "0:0.2, 2:0.35"; no gates: "none". */
export function formatTaus(taus: Record<string, number>): string {
  const depths = Object.keys(taus).sort((a, b) => Number(a) - Number(b));
  return depths.length === 0 ? 'none' : depths.map((d) => `${d}:${taus[d]}`).join(', ');
}

/** The knob fields of the form as the engine's knobs would fill them. */
export function knobFields(knobs: EngineKnobsEvent): Pick<RunForm, 'policy' | 'batch' | 'kmax' | 'taus' | 'tau'> & { confidence?: ConfidenceSignal } {
  return {
    policy: knobs.policy,
    batch: String(knobs.batch),
    kmax: String(knobs.kmax),
    taus: formatTaus(knobs.taus),
    tau: knobs.tau !== undefined ? String(knobs.tau) : DEFAULT_FORM.tau,
    ...(knobs.confidence ? { confidence: knobs.confidence } : {}),
  };
}

const KNOB_FIELDS = ['policy', 'batch', 'kmax', 'taus', 'tau', 'confidence'] as const;

/**
 * The form after the engine reported its knobs. A refused change puts back every knob the engine
 * kept; otherwise a field the user edited since the engine's previous report keeps the edit.
 */
export function syncForm(form: RunForm, knobs: EngineKnobsEvent, previous: EngineKnobsEvent | null): RunForm {
  const next = { ...form };
  const fields = knobFields(knobs);
  const before = previous ? knobFields(previous) : null;
  for (const key of KNOB_FIELDS) {
    const value = fields[key];
    if (value === undefined) continue;
    const edited = before !== null && knobs.refused === undefined && before[key] !== undefined && form[key] !== before[key];
    if (!edited) (next as Record<string, unknown>)[key] = value;
  }
  return next;
}

const sameTaus = (a: Record<string, number>, b: Record<string, number>): boolean => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
};

/**
 * The knobs a live run takes from the form: only those that differ from what the engine runs
 * (`engine`), so an Apply that changes K_max leaves a τ dragged meanwhile alone. Without the
 * engine's knobs (an older host), every knob in the form.
 */
export function formToKnobs(form: RunForm, engine: EngineKnobsEvent | null = null): { knobs: Knobs } | { errors: FieldErrors } {
  const taus = parseTaus(form.taus);
  if (typeof taus === 'string') return { errors: { taus } };
  const parsed = KnobsSchema.safeParse({
    kmax: toNumber(form.kmax),
    batch: toNumber(form.batch),
    ...(form.policy === 'fixed' ? { tau: toNumber(form.tau) } : typeof taus === 'object' ? { taus } : {}),
  });
  if (!parsed.success) {
    const errors: FieldErrors = {};
    for (const issue of parsed.error.issues) errors[(issue.path[0] ?? 'form') as keyof FieldErrors] ??= issue.message;
    return { errors };
  }
  const knobs: Knobs = { ...parsed.data };
  if (engine) {
    if (knobs.kmax === engine.kmax) delete knobs.kmax;
    if (knobs.batch === engine.batch) delete knobs.batch;
    if (knobs.taus !== undefined && sameTaus(knobs.taus, engine.taus)) delete knobs.taus;
    if (knobs.tau !== undefined && knobs.tau === engine.tau) delete knobs.tau;
  }
  const overLimit = batchOverLimit(knobs.batch, engine);
  if (overLimit !== null) return { errors: { batch: overLimit } };
  const kmax = knobs.kmax ?? engine?.kmax;
  const batch = knobs.batch ?? engine?.batch;
  const kmaxRule = kmax !== undefined && batch !== undefined ? kmaxProblem(kmax, batch) : null;
  if (kmaxRule !== null) return { errors: { kmax: kmaxRule } };
  return { knobs };
}

/**
 * Why a batch is past what the engine's memory plan allows for the loaded pair (the most KV slots
 * it can grow to), or null when it is not: shown at the field while the user types, before Apply.
 */
export function batchOverLimit(batch: number | undefined, engine: EngineKnobsEvent | null): string | null {
  const limit = engine?.batchLimit;
  if (batch === undefined || limit === undefined || !(batch > limit.max)) return null;
  return `at most ${limit.max} for this pair: ${limit.beyond}`;
}

/** "K_max 128, τ_d 0:0.2" for the knobs a change names. */
export function describeKnobs(knobs: Knobs): string {
  const parts: string[] = [];
  if (knobs.batch !== undefined) parts.push(`batch ${knobs.batch}`);
  if (knobs.kmax !== undefined) parts.push(`K_max ${knobs.kmax}`);
  if (knobs.taus !== undefined) parts.push(`τ_d ${formatTaus(knobs.taus)}`);
  if (knobs.tau !== undefined) parts.push(`τ ${knobs.tau}`);
  return parts.join(', ');
}


/**
 * Where the form's K_max comes from. Untouched, it follows a knee for the form's batch (the knee,
 * or batch + knee past it, as the command line's suggestKmax): the modelled clock's in use, else
 * this machine's measured one (hw.knee); with no knee known, the run's default for the batch (defaultKmax). Typed, it is the user's.
 */
export type KmaxFrom = 'clock' | 'measured' | 'typed';

export interface KmaxOrigin {
  from: KmaxFrom;
  /** The knee K_max follows, and whose it is; null when it follows none. */
  knee: { tokens: number; source: string } | null;
}

/** The knee K_max follows under `from`, given the clock in use and this machine's measured knee. */
export function kmaxOrigin(from: KmaxFrom, clock: string, measured: KneeSuggestion | null): KmaxOrigin {
  if (from === 'typed') return { from, knee: null };
  const measuredKnee = measured ? { tokens: measured.knee, source: "this machine's measured knee" } : null;
  if (from === 'measured') return { from, knee: measuredKnee };
  const modelled = clockKnee(clock);
  return { from, knee: modelled !== null ? { tokens: modelled, source: `the ${clockName(clock)} clock's knee` } : measuredKnee };
}

/** The K_max the origin gives a batch: its knee's, else the run's default rule (defaultKmax); null when typed. */
export function kmaxFor(origin: KmaxOrigin, batch: number): number | null {
  if (origin.from === 'typed' || !Number.isInteger(batch) || batch < 1) return null;
  return origin.knee === null ? defaultKmax(batch) : suggestKmax({ kmax: origin.knee.tokens }, batch);
}

/**
 * A gated policy started under a modelled clock or a measured profile is priced as that clock
 * charges (clockPricing), as the command line prices a run on `--hw`: the steps it chooses are
 * chosen for the clock it is read on. Other policies, and the wall clock, run as configured.
 */
export function pricedByClock(config: RunConfig, clock: string): RunConfig {
  const prices = isGatedPolicy(config.policy) ? clockPricing(clock) : null;
  return prices === null ? config : { ...config, verifyCost: prices.verifyCost, draftCost: prices.draftCost };
}

/** Says what a gated policy will be priced by under the clock in use. */
function PricedBy({ form }: { form: RunForm }) {
  const clock = useStudio((s) => s.clock);
  if (!isGatedPolicy(form.policy)) return null;
  const priced = clockPricing(clock) !== null;
  return (
    <p className="muted priced-by" data-testid="priced-by">
      {priced
        ? `${form.policy} is priced as the ${clockName(clock)} charges: a drafted token is verified only when its expected acceptance repays its verification and drafting there, so it may verify fewer than K_max`
        : `${form.policy} fills K_max: the wall clock has no price per token (choose a modelled clock or a measured profile to price it)`}
    </p>
  );
}

/** Says where K_max came from, and when it leaves almost nothing to draft. */
function KmaxSource({ form, origin, live }: { form: RunForm; origin: KmaxOrigin; live: boolean }) {
  const batch = toNumber(form.batch);
  const kmax = toNumber(form.kmax);
  if (!Number.isInteger(batch) || !Number.isInteger(kmax) || batch < 1 || kmaxProblem(kmax, batch) !== null) return null;
  const drafts = kmax - batch;
  // A live run's K_max is the engine's (its knobs event): no default to explain.
  const source =
    origin.from === 'typed' || live
      ? null
      : origin.knee !== null
        ? `K_max from ${origin.knee.source} (${origin.knee.tokens} tokens verified for about the price of one), for batch ${batch}`
        : "K_max is the default for the batch, max(64, 6 × batch): no knee is known on the wall clock yet (K_max from this machine's knee measures it)";
  // Fewer draft tokens than requests: most requests draft nothing at all.
  const thin = form.policy !== 'ar' && drafts < batch;
  if (source === null && !thin) return null;
  return (
    <p className="muted kmax-source" data-testid="kmax-source">
      {source}
      {source !== null && thin ? '. ' : ''}
      {thin && (
        <span className="warn" data-testid="kmax-thin">
          K_max {kmax} leaves {plural(drafts, 'draft token')} for {plural(batch, 'request')} ({(drafts / batch).toFixed(2)} each): almost nothing to draft
          {origin.knee !== null ? '; past the knee every drafted token lengthens verification, so a smaller batch leaves more to draft' : ''}.
        </span>
      )}
    </p>
  );
}

export interface RunPanelProps {
  /** Opens a native folder dialog where the host has one (Electron); absent in the browser. */
  chooseFolder?: () => Promise<string | null>;
}

type SetForm = React.Dispatch<React.SetStateAction<RunForm>>;

/** The engine's knobs are the truth: its start values, a dragged τ, a refused change all land in the form. */
function useEngineKnobsInForm(engineKnobs: EngineKnobsEvent | null, setForm: SetForm, setKnobsNote: (note: string) => void): void {
  const shownKnobs = useRef<EngineKnobsEvent | null>(null);
  useEffect(() => {
    if (engineKnobs === null || engineKnobs === shownKnobs.current) return;
    const previous = shownKnobs.current;
    shownKnobs.current = engineKnobs;
    setForm((f) => syncForm(f, engineKnobs, previous));
    if (engineKnobs.refused !== undefined) setKnobsNote(`refused (${engineKnobs.refused}); the form shows what the engine runs`);
    else if (previous !== null) setKnobsNote('applied; the form shows what the engine runs');
  }, [engineKnobs]);
}

/**
 * Where the form's K_max comes from (KmaxOrigin), and K_max kept on it: untouched, it follows the
 * knee for the form's batch; a live run's K_max is the engine's.
 */
function useKmaxOrigin(form: RunForm, live: boolean, setForm: SetForm): { origin: KmaxOrigin; setKmaxFrom: (from: KmaxFrom) => void } {
  const kneeSuggestion = useStudio((s) => s.kneeSuggestion);
  const kneeApplied = useRef<KneeSuggestion | null>(kneeSuggestion);
  const clock = useStudio((s) => s.clock);
  const [kmaxFrom, setKmaxFrom] = useState<KmaxFrom>('clock');
  const origin = kmaxOrigin(kmaxFrom, clock, kneeSuggestion);
  // The host's answer to "K_max from this machine's knee": K_max follows that knee from now on.
  useEffect(() => {
    if (kneeSuggestion === null || kneeSuggestion === kneeApplied.current) return;
    kneeApplied.current = kneeSuggestion;
    setKmaxFrom('measured');
  }, [kneeSuggestion]);
  // Choosing a clock makes its knee the default again, unless K_max was typed.
  useEffect(() => setKmaxFrom((from) => (from === 'typed' ? from : 'clock')), [clock]);
  const followed = live ? null : kmaxFor(origin, toNumber(form.batch));
  useEffect(() => {
    if (followed !== null) setForm((f) => (f.kmax === String(followed) ? f : { ...f, kmax: String(followed) }));
  }, [followed]);
  return { origin, setKmaxFrom };
}

/**
 * An opened trace (a replay): the form takes its policy and K_max, so it no longer shows the
 * previous run's, and Start runs what the trace ran (its other settings are not in its steps).
 */
function useReplayInForm(live: boolean, policies: readonly string[], setForm: SetForm, setKmaxFrom: (from: KmaxFrom) => void): void {
  const replays = useStudio((s) => s.replays);
  const replayPolicy = useStudio((s) => (s.replays > 0 ? (s.metrics?.policy ?? null) : null));
  const replayKmax = useStudio((s) => (s.replays > 0 ? (s.latestStep?.kmax ?? null) : null));
  const replayShown = useRef(0);
  useEffect(() => {
    if (live || replays === replayShown.current || replayPolicy === null) return;
    replayShown.current = replays;
    setForm((f) => ({ ...f, ...(policies.includes(replayPolicy) ? { policy: replayPolicy } : {}), ...(replayKmax !== null ? { kmax: String(replayKmax) } : {}) }));
    if (replayKmax !== null) setKmaxFrom('typed');
  }, [live, replays, replayPolicy, replayKmax, policies]);
}

/** "K_max from this machine's knee", and what the host answered. */
function KneeRow({ live, askKnee }: { live: boolean; askKnee: () => void }) {
  const kneeSuggestion = useStudio((s) => s.kneeSuggestion);
  // The host reports the timing as the 'knee' task until it answers or fails.
  const timingKnee = useStudio((s) => s.progress.knee !== undefined);
  return (
    <>
      <div className="field-row knee-row">
        <button
          type="button"
          disabled={live || timingKnee}
          title="times the target's forward against packed tokens on this machine (a second or two), finds the knee where its cost turns linear, and sets K_max for the batch size: the knee, or batch + knee once the batch passes it"
          onClick={askKnee}
        >
          K_max from this machine's knee
        </button>
        {kneeSuggestion && (
          <span className="muted" data-testid="knee-suggestion">
            knee {kneeSuggestion.knee} tokens: K_max {kneeSuggestion.kmax} for batch {kneeSuggestion.batch}
          </span>
        )}
      </div>
      {kneeSuggestion && kneeSuggestion.batch >= kneeSuggestion.knee && (
        // Past the knee the roots alone fill the flat part of the target's cost curve: a drafted
        // token pays for itself only if accepted often enough (docs/echo.md, priced ECHO).
        <p className="muted" data-testid="knee-past">
          Batch {kneeSuggestion.batch} is at or past the knee: every drafted token lengthens verification, so on this
          machine plain decoding (ar) may be faster. Run both and compare with Keep for comparison.
        </p>
      )}
    </>
  );
}

/** The policy, batch, K_max, τ and confidence signal: the knobs a live run takes between steps. */
function PolicyBudgetFieldset({
  form,
  set,
  errors,
  input,
  live,
  policies,
  engineKnobs,
  origin,
  askKnee,
}: {
  form: RunForm;
  set: <K extends keyof RunForm>(key: K, value: RunForm[K]) => void;
  errors: FieldErrors;
  input: FormInput;
  live: boolean;
  policies: readonly string[];
  engineKnobs: EngineKnobsEvent | null;
  origin: KmaxOrigin;
  askKnee: () => void;
}) {
  return (
    <fieldset>
      <legend>Policy and budget</legend>
      <Field label="policy" htmlFor="run-policy" error={errors.policy}>
        <select id="run-policy" value={form.policy} disabled={live} onChange={(e) => set('policy', e.target.value)}>
          {policies.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </Field>
      <div className="field-row">
        <Field label="batch size" htmlFor="run-batch" error={errors.batch ?? (live ? (batchOverLimit(toNumber(form.batch), engineKnobs) ?? undefined) : undefined)}>
          {/* A live run's batch goes as far as the pair's memory allows (its KV slots are reallocated past those loaded). */}
          {input('batch', { type: 'number', knob: true, max: live ? engineKnobs?.batchLimit?.max : undefined })}
        </Field>
        <Field label="K_max" htmlFor="run-kmax" error={errors.kmax}>
          {input('kmax', { type: 'number', knob: true })}
        </Field>
      </div>
      {form.policy === 'fixed' ? (
        <Field label="τ (every gated depth)" htmlFor="run-tau" error={errors.tau}>
          {input('tau', { type: 'number', step: '0.01', knob: true })}
        </Field>
      ) : (
        <Field label="τ_d (depth:τ, …; empty: calibrate first)" htmlFor="run-taus" error={errors.taus}>
          {input('taus', { knob: true })}
        </Field>
      )}
      <KmaxSource form={form} origin={origin} live={live} />
      {!live && <PricedBy form={form} />}
      <KneeRow live={live} askKnee={askKnee} />
      {isGatedPolicy(form.policy) && (
        <Field label="confidence signal (what τ is compared with)" htmlFor="run-confidence" error={errors.confidence}>
          <select id="run-confidence" value={form.confidence} disabled={live} onChange={(e) => set('confidence', e.target.value as RunForm['confidence'])}>
            {(['auto', ...ConfidenceSignalSchema.options] as const).map((signal) => (
              <option key={signal} value={signal}>
                {SIGNAL_LABELS[signal]}
              </option>
            ))}
          </select>
        </Field>
      )}
    </fieldset>
  );
}

/** Why the form cannot ask for the knee yet (no batch, no target folder), or null. */
function kneeRequestError(form: RunForm): FieldErrors | null {
  const batch = toNumber(form.batch);
  if (!Number.isInteger(batch) || batch < 1) return { batch: 'give a batch size first: K_max is suggested for it' };
  if (form.modelSource === 'folders' && form.targetDir.trim() === '') return { targetDir: 'choose the target folder first: its forward is what gets timed' };
  return null;
}

export function RunPanel({ chooseFolder }: RunPanelProps) {
  const [form, setForm] = useState<RunForm>(DEFAULT_FORM);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [knobsNote, setKnobsNote] = useState<string | null>(null);
  const runState = useStudio((s) => s.runState);
  const bundled = useStudio((s) => s.status?.bundledModels ?? NO_MODELS);
  // The engine host lists the bundled prompt sets it has.
  const domains = useStudio((s) => s.status?.domains ?? NO_DOMAINS);
  const policies = useStudio((s) => s.status?.policies ?? BUILT_IN_POLICIES);
  const store = useStudioStore();
  const send = useSend();
  const live = runState === 'running' || runState === 'paused' || runState === 'loading';
  const engineKnobs = useStudio((s) => s.engineKnobs);
  // A live run this page did not start: only its knobs are known (the engine's knobs event).
  const startedElsewhere = useStudio((s) => s.config === null) && live;
  useEngineKnobsInForm(engineKnobs, setForm, setKnobsNote);
  const { origin, setKmaxFrom } = useKmaxOrigin(form, live, setForm);
  useReplayInForm(live, policies, setForm, setKmaxFrom);
  const set = <K extends keyof RunForm>(key: K, value: RunForm[K]): void => setForm((f) => ({ ...f, [key]: value }));
  const input: FormInput = (key, props = {}) => (
    <input
      id={`run-${key}`}
      name={key}
      type={props.type ?? 'text'}
      step={props.step}
      max={props.max}
      value={form[key]}
      disabled={live && !props.knob}
      onChange={(e) => {
        if (key === 'kmax') setKmaxFrom('typed');
        set(key, e.target.value as never);
      }}
    />
  );

  const start = (e: FormEvent): void => {
    e.preventDefault();
    const result = formToConfig(form);
    if ('errors' in result) {
      setErrors(result.errors);
      return;
    }
    setErrors({});
    const config = pricedByClock(result.config, store.getState().clock);
    store.getState().runStarted(config);
    send({ type: 'run.start', config });
  };

  const applyKnobs = (): void => {
    const result = formToKnobs(form, engineKnobs);
    if ('errors' in result) {
      setErrors(result.errors);
      return;
    }
    setErrors({});
    if (Object.keys(result.knobs).length === 0) {
      setKnobsNote('unchanged: the form already shows what the engine runs');
      return;
    }
    for (const [depth, tau] of Object.entries(result.knobs.taus ?? {})) store.getState().setTau(Number(depth), tau);
    send({ type: 'knobs.set', knobs: result.knobs });
    setKnobsNote(`sent (${describeKnobs(result.knobs)}); the engine applies them from its next step`);
  };

  const askKnee = (): void => {
    const problem = kneeRequestError(form);
    setErrors(problem ?? {});
    if (problem === null) send({ type: 'hw.knee', batch: toNumber(form.batch), ...(form.modelSource === 'folders' ? { targetDir: form.targetDir.trim() } : {}) });
  };

  const pickFolder = async (key: 'draftDir' | 'targetDir'): Promise<void> => {
    if (!chooseFolder) return;
    try {
      const dir = await chooseFolder();
      if (dir !== null) set(key, dir);
    } catch (err) {
      store.getState().reportError('Could not open the folder dialog', err instanceof Error ? err.message : String(err));
    }
  };

  return (
    <form className="view run-panel" aria-label="Run panel" onSubmit={start} noValidate>
      <header className="view-header">
        <h2>Run</h2>
        <span className={`run-state state-${runState}`} data-testid="run-panel-state">
          {runState}
        </span>
      </header>
      <PolicyBudgetFieldset form={form} set={set} errors={errors} input={input} live={live} policies={policies} engineKnobs={engineKnobs} origin={origin} askKnee={askKnee} />
      {startedElsewhere ? (
        <p className="muted" data-testid="run-elsewhere">
          This run was started from another window. The engine reports its policy, batch, K_max and τ (above); its model
          pair, prompts, requests and sampling are not known here, so they are not shown.
        </p>
      ) : (
        <>
        <ModelPairFieldset form={form} set={set} errors={errors} input={input} live={live} bundled={bundled} pickFolder={chooseFolder ? pickFolder : null} />
        <PromptsFieldset form={form} set={set} errors={errors} input={input} live={live} domains={domains} />
        <SamplingFieldset errors={errors} input={input} live={live} />
        </>
      )}
      {errors.form && (
        <p className="field-error" role="alert">
          {errors.form}
        </p>
      )}
      <RunButtons runState={runState} live={live} applyKnobs={applyKnobs} />
      {knobsNote && (live || engineKnobs?.refused !== undefined) && (
        <p className="muted" data-testid="knobs-note">
          Knobs {knobsNote}.
        </p>
      )}
    </form>
  );
}
