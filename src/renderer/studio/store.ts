// The studio's state: one zustand store in four slices (run, stream, knobs, view). Engine events
// enter through `ingest`; canvas views subscribe to it outside React and redraw on change, charts
// read it through throttled hooks. Frames arrive batched (≤ 30/s), so each frame is one update.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { RunConfig } from '../../shared/config.js';
import type { DepthHistogram, RunMetrics, StepEvent } from '../../shared/events.js';
import type { EngineEvent, EngineKnobsEvent, EventOf, ReportEvent, RunState, StatusEvent } from '../../shared/messages.js';
import { defineProfileClock, type ClockOption } from './clock.js';
import { clampLayout, DEFAULT_LAYOUT, type PanelLayout } from './layout.js';
import { digestStep, type DeliveredFrame, type GateStep, type StepDigest } from './digest.js';
import type { TextSegment } from './requestText.js';
import { thinSeries, type StepPoint } from './series.js';

/** Step events kept whole for the views that look back (gate grid, teaching, stepping back). */
export const RECENT_STEPS = 64;
/** Points kept per run for the charts over time; older ones are thinned, never dropped whole. */
export const MAX_POINTS = 4000;
/** Text segments kept per request. */
export const MAX_SEGMENTS = 512;

export interface ProgressEntry {
  task: string;
  done: number;
  total: number;
  message?: string;
}

/** A finished task's answer (model.open, trace.export), shown briefly after its bar goes. */
export interface StudioNotice {
  id: number;
  task: string;
  message: string;
}

export interface StudioError {
  id: number;
  message: string;
  detail?: string;
}

export type KneeSuggestion = EventOf<'hw.knee'>;

/** Every step of a run summed, exactly (the points past MAX_POINTS are thinned, these never are). */
export interface StepTotals {
  steps: number;
  /** Tokens appended to outputs. */
  emitted: number;
  /** The steps' own wall time, prefill of admitted requests included. */
  wallMs: number;
}

export interface ComparisonRun {
  label: string;
  points: StepPoint[];
  totals: StepTotals;
  /** Its whole-run metrics when kept, if it had any yet. */
  metrics: RunMetrics | null;
}

export interface RunSlice {
  runState: RunState;
  status: StatusEvent | null;
  /** The config of the run started from this UI, when it was. */
  config: RunConfig | null;
  progress: Record<string, ProgressEntry>;
  notices: StudioNotice[];
  errors: StudioError[];
  /**
   * The last step of the run or opened trace, kept while a trace.seek replays an earlier part of
   * it (the scrubber's end); null before any step.
   */
  runEndStep: number | null;
  /** A trace.seek was sent and its replay (which starts at step 0) has not begun yet. */
  seekPending: boolean;
  /** The engine host's latest answer to hw.knee: the target's knee on this machine and its K_max. */
  kneeSuggestion: KneeSuggestion | null;
  /**
   * The knobs the engine runs with (its latest 'knobs' event: after the run's setup, after each
   * knobs.set, refused ones included); null before a run steps. The form shows these.
   */
  engineKnobs: EngineKnobsEvent | null;
  /** The report folder opened last (report.open, or the quick study's own report when it ends). */
  report: ReportEvent | null;
  /**
   * Counts the replays shown (an opened trace, or a finished run re-sent from its start without a
   * seek): each drops what belonged to the run shown before it — the config started here, the
   * engine's knobs — so no view labels the trace with the old run's settings.
   */
  replays: number;
}

export interface StreamSlice {
  /** The last RECENT_STEPS step events received whole, oldest first. */
  steps: StepEvent[];
  /** Gate checks of the last RECENT_STEPS steps, whole or digested, oldest first. */
  gateSteps: GateStep[];
  latestStep: StepEvent | null;
  points: StepPoint[];
  histograms: DepthHistogram[];
  metrics: RunMetrics | null;
  texts: Record<string, TextSegment[]>;
  /** Every step received, summed: the wall clock's throughput, the same live and replayed. */
  totals: StepTotals;
  /** Bumped on every frame; cheap change signal for subscribers. */
  frameCount: number;
}

export interface KnobsSlice {
  /**
   * τ per gated depth: the engine's (its knobs events), or what the user set since (knobs.set sent,
   * until the engine answers). A depth absent has no gate.
   */
  taus: Record<string, number>;
}

export interface ViewSlice {
  selectedRequestId: string | null;
  /** Step shown when looking back; null follows the newest step. */
  pinnedStep: number | null;
  teaching: boolean;
  compare: ComparisonRun | null;
  /** The clock throughput and speedups are read under: 'wall', a modelled device or a measured profile (studio/clock.ts). */
  clock: string;
  /** Measured profiles loaded as clocks (clock.profile answers), beside the wall clock and the presets. */
  profileClocks: ClockOption[];
  /** The sizes the user dragged the main regions to (studio/layout.ts). */
  layout: PanelLayout;
}

export interface StudioActions {
  ingest(event: EngineEvent): void;
  /** A frame whose older steps came as digests (see digest.ts); `steps` are the whole ones. */
  ingestFrame(steps: StepEvent[], digests: StepDigest[], histograms?: DepthHistogram[], metrics?: RunMetrics): void;
  runStarted(config: RunConfig): void;
  reportError(message: string, detail?: string): void;
  dismissError(id: number): void;
  dismissNotice(id: number): void;
  /** Records that trace.seek was sent, so the replay from step 0 keeps the run's end step. */
  seekStarted(): void;
  selectRequest(requestId: string | null): void;
  pinStep(step: number | null): void;
  setTeaching(on: boolean): void;
  setTau(depth: number, tau: number): void;
  /** Takes the gate off a depth (until the engine answers with its own set). */
  removeTau(depth: number): void;
  keepForCompare(label: string): void;
  setClock(clock: string): void;
  clearCompare(): void;
  /** Resizes regions of the shell; each size is kept inside its range. */
  setLayout(change: Partial<PanelLayout>): void;
}

export type StudioState = RunSlice & StreamSlice & KnobsSlice & ViewSlice & StudioActions;
export type StudioStore = StoreApi<StudioState>;

const emptyStream = (): StreamSlice => ({
  steps: [],
  gateSteps: [],
  latestStep: null,
  points: [],
  histograms: [],
  metrics: null,
  texts: {},
  totals: { steps: 0, emitted: 0, wallMs: 0 },
  frameCount: 0,
});

let nextErrorId = 1;
let nextNoticeId = 1;

type Set = StudioStore['setState'];
type Get = StudioStore['getState'];

/** Each request's text with a frame's segments appended (at most MAX_SEGMENTS kept a request). */
function appendTexts(texts: Record<string, TextSegment[]>, all: readonly StepDigest[]): Record<string, TextSegment[]> {
  const out = { ...texts };
  for (const digest of all) {
    for (const { requestId, segment } of digest.texts) {
      const list = out[requestId] ?? [];
      const next = list.length >= MAX_SEGMENTS ? list.slice(list.length - MAX_SEGMENTS + 1) : list.slice();
      next.push(segment);
      out[requestId] = next;
    }
  }
  return out;
}

/** The running totals with a frame's steps added. */
function addTotals(totals: StepTotals, all: readonly StepDigest[]): StepTotals {
  const out = { ...totals };
  for (const { point } of all) {
    out.steps += 1;
    out.emitted += point.emitted;
    out.wallMs += point.totalMs;
  }
  return out;
}

/** What one frame changes in the state: its steps appended, or a fresh start when it begins a new run or replay. */
function frameUpdate(state: StudioState, steps: StepEvent[], digests: StepDigest[], histograms?: DepthHistogram[], metrics?: RunMetrics): Partial<StudioState> {
  const all = digests.concat(steps.map(digestStep)).sort((a, b) => a.step - b.step);
  // Step 0 after other steps means a new run (or a replay from the start): start clean.
  const restart = all.length > 0 && state.latestStep !== null && all[0].step === 0;
  // Steps from step 0 while no run is live and no seek was asked for: a trace being opened (or
  // a finished run re-sent); what this page knew of the run before it no longer describes it.
  const live = state.runState === 'running' || state.runState === 'paused' || state.runState === 'loading';
  // The first steps after this page started a run are that run's, whatever state came first.
  const startedHere = state.config !== null && state.latestStep === null;
  const replay = all.length > 0 && all[0].step === 0 && !live && !state.seekPending && !startedHere;
  const base: StreamSlice = restart ? emptyStream() : state;
  const frameEnd = all.length > 0 ? all[all.length - 1].step : null;
  // A seek's replay keeps the end of what is being scrubbed; any other restart is a new run.
  const runEndStep =
    restart && !state.seekPending ? frameEnd : frameEnd === null ? state.runEndStep : Math.max(state.runEndStep ?? frameEnd, frameEnd);
  const keep = <T,>(list: T[]): T[] => (list.length > RECENT_STEPS ? list.slice(list.length - RECENT_STEPS) : list);
  const newPoints = base.points.concat(all.map((d) => d.point));
  return {
    steps: keep(base.steps.concat(steps)),
    gateSteps: keep(base.gateSteps.concat(all.map((d) => d.gates))),
    latestStep: steps.length > 0 ? steps[steps.length - 1] : base.latestStep,
    points: newPoints.length > MAX_POINTS ? thinSeries(newPoints, MAX_POINTS * 0.75) : newPoints,
    histograms: histograms ?? base.histograms,
    metrics: metrics ?? base.metrics,
    texts: appendTexts(base.texts, all),
    totals: addTotals(base.totals, all),
    frameCount: state.frameCount + 1,
    runEndStep,
    ...(restart ? { pinnedStep: null, seekPending: false } : {}),
    ...(replay ? { config: null, engineKnobs: null, taus: {}, replays: state.replays + 1 } : {}),
  };
}

/** The progress bars and notices after a progress event: a finished task's bar goes and its message becomes the notice. */
function progressUpdate(state: StudioState, event: EventOf<'progress'>): Pick<StudioState, 'progress' | 'notices'> {
  const progress = { ...state.progress };
  const done = event.total > 0 && event.done >= event.total;
  if (done) delete progress[event.task];
  else progress[event.task] = { task: event.task, done: event.done, total: event.total, message: event.message };
  // A finished task's message is its answer (the model checked, where the export went).
  // One notice at a time: a run's setup finishes several tasks within a second, and a
  // stack of their answers would push the panel down; the newest answer replaces the rest.
  const notices = done && event.message ? [{ id: nextNoticeId++, task: event.task, message: event.message }] : state.notices;
  return { progress, notices };
}

/** One engine event into the store. */
function ingestEvent(event: EngineEvent, set: Set, get: Get): void {
  switch (event.type) {
    case 'frame':
      // Transports deliver a frame's older steps as digests (see digest.ts).
      get().ingestFrame(event.steps, (event as DeliveredFrame).digests ?? [], event.histograms, event.metrics);
      return;
    case 'status':
      set({ status: event, runState: event.runState });
      return;
    case 'run.state':
      // A run that starts streaming again ends any scrubbing.
      set({ runState: event.state, ...(event.state === 'running' || event.state === 'loading' ? { seekPending: false } : {}) });
      return;
    case 'progress':
      set(progressUpdate(get(), event));
      return;
    case 'error':
      get().reportError(event.message, event.detail);
      return;
    case 'hw.knee':
      set({ kneeSuggestion: event });
      return;
    case 'knobs':
      set({ engineKnobs: event, taus: { ...event.taus } });
      return;
    case 'report':
      set({ report: event });
      return;
    case 'clock.profile': {
      // The profile asked for becomes the clock at once.
      const option = defineProfileClock(event);
      set({ profileClocks: [...get().profileClocks.filter((o) => o.id !== option.id), option], clock: option.id });
      return;
    }
  }
}

/** The state before any event: idle, nothing streamed, the wall clock, the default layout. */
function initialState(): RunSlice & StreamSlice & KnobsSlice & ViewSlice {
  return {
    runState: 'idle',
    status: null,
    config: null,
    progress: {},
    notices: [],
    errors: [],
    runEndStep: null,
    seekPending: false,
    kneeSuggestion: null,
    engineKnobs: null,
    report: null,
    replays: 0,
    ...emptyStream(),
    taus: {},
    selectedRequestId: null,
    pinnedStep: null,
    teaching: false,
    compare: null,
    clock: 'wall',
    profileClocks: [],
    layout: DEFAULT_LAYOUT,
  };
}

/** What the views and transports may do to the store. */
function actions(set: Set, get: Get): StudioActions {
  return {
    ingest(event) {
      ingestEvent(event, set, get);
    },
    ingestFrame(steps, digests, histograms, metrics) {
      set(frameUpdate(get(), steps, digests, histograms, metrics));
    },
    runStarted(config) {
      set({ ...emptyStream(), config, engineKnobs: null, taus: { ...(config.taus ?? {}) }, pinnedStep: null, selectedRequestId: null, runEndStep: null, seekPending: false });
    },
    reportError(message, detail) {
      const error: StudioError = { id: nextErrorId++, message, ...(detail !== undefined ? { detail } : {}) };
      // Keep the newest few; a flood of identical errors should not bury the banner.
      const errors = get().errors.filter((e) => e.message !== message || e.detail !== detail);
      set({ errors: [...errors, error].slice(-5) });
    },
    dismissError(id) {
      set({ errors: get().errors.filter((e) => e.id !== id) });
    },
    dismissNotice(id) {
      set({ notices: get().notices.filter((n) => n.id !== id) });
    },
    seekStarted() {
      set({ seekPending: true });
    },
    selectRequest(requestId) {
      set({ selectedRequestId: requestId });
    },
    pinStep(step) {
      set({ pinnedStep: step });
    },
    setTeaching(on) {
      set({ teaching: on });
    },
    setTau(depth, tau) {
      set({ taus: { ...get().taus, [String(depth)]: tau } });
    },
    removeTau(depth) {
      const { [String(depth)]: _removed, ...rest } = get().taus;
      set({ taus: rest });
    },
    keepForCompare(label) {
      set({ compare: { label, points: get().points.slice(), totals: get().totals, metrics: get().metrics } });
    },
    setClock(clock) {
      set({ clock });
    },
    clearCompare() {
      set({ compare: null });
    },
    setLayout(change) {
      set({ layout: clampLayout({ ...get().layout, ...change }) });
    },
  };
}

export function createStudioStore(): StudioStore {
  return createStore<StudioState>()((set, get) => ({ ...initialState(), ...actions(set, get) }));
}

/** The step the views show: the pinned one while it is still in the window, else the newest. */
export function viewedStep(state: Pick<StudioState, 'steps' | 'latestStep' | 'pinnedStep'>): StepEvent | null {
  if (state.pinnedStep !== null) {
    const pinned = state.steps.find((s) => s.step === state.pinnedStep);
    if (pinned) return pinned;
  }
  return state.latestStep;
}
