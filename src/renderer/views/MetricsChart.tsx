// Metrics over time (throughput, MAT, draft utilisation, verified tokens per step), computed per
// step from the stream; compare mode overlays a kept run (e.g. echo against static).
import { memo, useMemo, useRef, useState, type FormEvent } from 'react';
import { CartesianGrid, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts';
import type { RunMetrics } from '../../shared/events.js';
import { compareRuns } from '../../shared/step-costs.js';
import { METRIC_KEYS, metricSeries, overlaySeries, sameSteps, settingChanges, thinSeries, type MetricKey, type StepPoint } from '../studio/series.js';
import type { ComparisonRun, StepTotals, StudioState } from '../studio/store.js';
import { formatNumber } from '../studio/tokens.js';
import { COMPARE_COLOUR, GRANT_COLOURS } from './colors.js';
import { CLOCK_OPTIONS, clockName, isProfileClock, stepSplit, stepTimer, throughputOf, WALL_CLOCK } from '../studio/clock.js';
import { useOnScreen, useSend, useStudio, useStudioStore, useThrottledStudio } from './StudioContext.js';
import { useCanvasSize } from './useCanvas.js';

const TITLES: Record<MetricKey, string> = {
  throughput: 'Throughput (tokens/s',
  mat: 'MAT (accepted per request-step, bonus excluded)',
  utilisation: 'Draft utilisation (accepted / verified drafts)',
  verifiedTokens: 'Verified tokens per step',
};
const CHART_POINTS = 200;

const selectPoints = (s: StudioState): StepPoint[] => s.points;
const selectMetrics = (s: StudioState): RunMetrics | null => s.metrics;
const selectTotals = (s: StudioState): StepTotals => s.totals;

const MetricPanel = memo(function MetricPanel({
  metric,
  order,
  compare,
  runLabel,
  clock,
}: {
  metric: MetricKey;
  /** The clock throughput is read under. */
  clock: string;
  /** Position in the list; spreads the charts' re-renders over the second (see useThrottledStudio). */
  order: number;
  compare: ComparisonRun | null;
  runLabel: string;
}) {
  const boxRef = useRef<HTMLDivElement>(null);
  const onScreen = useOnScreen(boxRef);
  const points = useThrottledStudio(selectPoints, 1000, Object.is, 450 + order * 80, onScreen);
  const series = useMemo(() => metricSeries(thinSeries(points, CHART_POINTS), 8, stepTimer(clock)), [points, clock]);
  const compareSeries = useMemo(() => (compare ? metricSeries(thinSeries(compare.points, CHART_POINTS), 8, stepTimer(clock)) : []), [compare, clock]);
  const rows = useMemo(
    () =>
      overlaySeries(
        [
          { prefix: 'run', points: series },
          { prefix: 'compare', points: compareSeries },
        ],
        metric,
      ),
    [series, compareSeries, metric],
  );
  const compareLabel = compare ? compare.label : null;
  const { width } = useCanvasSize(boxRef);
  return (
    <figure className="metric-chart" data-testid={`metric-${metric}`}>
      <figcaption>
        {TITLES[metric]}
        {metric === 'throughput' ? `, ${clockName(clock)})` : ''}
        {compareLabel !== null && (
          <span className="legend-inline" data-testid={`legend-${metric}`}>
            <span>
              <span className="swatch line" style={{ borderTopColor: GRANT_COLOURS.depth }} /> {runLabel} (this run)
            </span>
            <span>
              <span className="swatch line dashed" style={{ borderTopColor: COMPARE_COLOUR }} /> {compareLabel} (kept)
            </span>
          </span>
        )}
      </figcaption>
      <div className="chart-box" ref={boxRef}>
        {width > 0 && (
          <LineChart width={width} height={120} data={rows} margin={{ top: 4, right: 10, bottom: 0, left: 0 }}>
            <CartesianGrid strokeDasharray="2 3" vertical={false} />
            <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} interval={0} tick={{ fontSize: 10 }} height={18} />
            <YAxis width={44} interval={0} tick={{ fontSize: 10 }} tickFormatter={(v: number) => (metric === 'verifiedTokens' || Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2))} />
            {/* Token counts are whole numbers. */}
            <Tooltip isAnimationActive={false} formatter={(v) => (typeof v === 'number' ? formatNumber(v, metric === 'verifiedTokens' ? 0 : 2) : String(v))} />
            <Line dataKey="run" name={runLabel} stroke={GRANT_COLOURS.depth} dot={false} strokeWidth={1.6} isAnimationActive={false} connectNulls />
            {compareLabel !== null && (
              <Line dataKey="compare" name={compareLabel} stroke={COMPARE_COLOUR} strokeDasharray="4 3" dot={false} strokeWidth={1.6} isAnimationActive={false} connectNulls />
            )}
          </LineChart>
        )}
      </div>
    </figure>
  );
});

const ratio = (x: number): string => (Number.isFinite(x) && x > 0 ? `${x.toFixed(3)}×` : '–');

/**
 * A run's throughput under the clock: on the wall clock every step's own time summed exactly
 * (prefill of admitted requests included; pauses and the time between steps left out), so a run
 * reads the same live and replayed; on a modelled clock its steps priced on the device.
 */
function runThroughput(points: readonly StepPoint[], totals: StepTotals, clock: string): number {
  if (clock === WALL_CLOCK) return totals.wallMs > 0 ? (totals.emitted * 1000) / totals.wallMs : 0;
  return throughputOf(points, clock);
}

/** The clock a number was read on, beside it: every time shown says which clock it is. */
function ClockTag({ clock, note }: { clock: string; note?: string }) {
  return (
    <span className="clock-tag" title={note}>
      {clockName(clock)}
    </span>
  );
}

/** This run against the kept one: how much faster, and whether from fewer steps or cheaper ones. */
function ComparisonLine({
  run,
  kept,
  clock,
  points,
  totals,
}: {
  run: RunMetrics;
  kept: ComparisonRun;
  clock: string;
  points: StepPoint[];
  totals: StepTotals;
}) {
  const label = kept.label;
  if (sameSteps(points, kept.points)) {
    return (
      <>
        <dt>against {label}</dt>
        <dd data-testid="run-comparison">the kept run itself (the same steps): nothing to compare</dd>
      </>
    );
  }
  const speedup = runThroughput(points, totals, clock) / runThroughput(kept.points, kept.totals, clock);
  const changed = [
    ...settingChanges(points).map((c) => `this run: ${c}`),
    ...settingChanges(kept.points).map((c) => `${label}: ${c}`),
  ];
  const c = clock === WALL_CLOCK && kept.metrics ? compareRuns(run, kept.metrics) : null;
  return (
    <>
      <dt>against {label}</dt>
      <dd
        data-testid="run-comparison"
        title={
          c?.steps
            ? `same requests and tokens: throughput ÷ ${label}'s is about its steps ÷ these steps ÷ the time of a step; "at its step cost" prices these steps at ${label}'s (prefill as measured): what taking fewer steps buys on its own`
            : clock === WALL_CLOCK
              ? `other requests or tokens than ${label}'s: steps do not compare`
              : `both runs' steps priced on the ${clockName(clock)} clock (draft and verify; prefill left out)`
        }
      >
        {ratio(speedup)} its throughput <ClockTag clock={clock} />
        {c?.steps && (
          <span className="comparison-detail">
            {c.steps.run} steps to its {c.steps.base} · {ratio(c.steps.stepTime)} its time a step · {ratio(c.steps.sched)} at its step cost
          </span>
        )}
        {changed.length > 0 && (
          <span className="comparison-detail warn" data-testid="comparison-changed">
            settings changed mid-run ({changed.join('; ')}): the ratio mixes them
          </span>
        )}
      </dd>
    </>
  );
}

/** The label of the run shown: the policy its steps' metrics name, else the engine's, else the one started here. */
function runLabelOf(state: Pick<StudioState, 'config' | 'metrics' | 'engineKnobs'>): string {
  return state.metrics?.policy ?? state.engineKnobs?.policy ?? state.config?.policy ?? 'this run';
}

/** Mean modelled draft and verify time per step under a modelled clock (prefill is not modelled). */
function modelledStepSplit(points: readonly StepPoint[], clock: string): { draftMs: number; verifyMs: number } | null {
  if (clock === WALL_CLOCK || points.length === 0) return null;
  let draftMs = 0;
  let verifyMs = 0;
  for (const p of points) {
    const split = stepSplit(p, clock);
    draftMs += split.draftMs;
    verifyMs += split.verifyMs;
  }
  return { draftMs: draftMs / points.length, verifyMs: verifyMs / points.length };
}

/** The clock select's entry that asks for a profile file instead of naming a clock. */
const PICK_PROFILE = 'pick-profile';

/**
 * The clock knob: the wall clock, the modelled presets, the measured profiles loaded so far, and
 * "a measured profile…", which asks for a `profile-hw` file's path (in the folders the studio may
 * read) and sends clock.profile; the engine host's answer becomes the clock.
 */
function ClockSelect() {
  const clock = useStudio((s) => s.clock);
  const profiles = useStudio((s) => s.profileClocks);
  const store = useStudioStore();
  const send = useSend();
  const [picking, setPicking] = useState(false);
  const [file, setFile] = useState('');
  const submitProfile = (e: FormEvent): void => {
    e.preventDefault();
    if (file.trim() === '') return;
    send({ type: 'clock.profile', path: file.trim() });
    setPicking(false);
  };
  return (
    <>
      <label className="clock-select">
        clock{' '}
        <select
          aria-label="clock"
          value={picking ? PICK_PROFILE : clock}
          onChange={(e) => {
            if (e.target.value === PICK_PROFILE) setPicking(true);
            else {
              setPicking(false);
              store.getState().setClock(e.target.value);
            }
          }}
        >
          {[...CLOCK_OPTIONS, ...profiles].map((option) => (
            <option key={option.id} value={option.id}>
              {option.label}
            </option>
          ))}
          <option value={PICK_PROFILE}>a measured profile (profile-hw JSON)…</option>
        </select>
      </label>
      {picking && (
        <form className="clock-profile" onSubmit={submitProfile}>
          <input
            aria-label="hardware profile file"
            placeholder="hw.json from profile-hw --out or --json"
            value={file}
            onChange={(e) => setFile(e.target.value)}
          />
          <button type="submit" disabled={file.trim() === ''}>
            Use profile
          </button>
        </form>
      )}
    </>
  );
}

export function MetricsChart() {
  // Charts re-render once a second each, at different moments: often enough to watch a trend,
  // cheap enough to stream beside.
  const hasPoints = useStudio((s) => s.points.length > 0);
  const metrics = useThrottledStudio(selectMetrics, 1000, Object.is, 940);
  const compare: ComparisonRun | null = useStudio((s) => s.compare);
  const runLabel = useStudio(runLabelOf);
  const draftWindow = useStudio((s) => s.config?.draftWindow);
  const clock = useStudio((s) => s.clock);
  const points = useThrottledStudio(selectPoints, 1000, Object.is, 970);
  const totals = useThrottledStudio(selectTotals, 1000, Object.is, 970);
  const changes = useMemo(() => settingChanges(points), [points]);
  const modelledSplit = useMemo(() => modelledStepSplit(points, clock), [points, clock]);
  const store = useStudioStore();
  return (
    <section className="view metrics" aria-label="Metrics">
      <header className="view-header">
        <h2>Metrics over time</h2>
        <button type="button" disabled={!hasPoints} onClick={() => store.getState().keepForCompare(runLabel)}>
          Keep for comparison
        </button>
        {compare && (
          <button type="button" onClick={() => store.getState().clearCompare()}>
            Clear comparison ({compare.label})
          </button>
        )}
        <ClockSelect />
      </header>
      {metrics && (
        <dl className="metric-summary" data-testid="run-metrics">
          <dt>policy</dt>
          <dd>
            {metrics.policy}
            {changes.length > 0 && (
              <span className="warn" data-testid="run-changed">
                {' '}
                · changed mid-run: {changes.join(', ')}
              </span>
            )}
          </dd>
          <dt>throughput</dt>
          <dd data-testid="throughput">
            {formatNumber(runThroughput(points, totals, clock), 1)} tok/s{' '}
            <ClockTag
              clock={clock}
              note={
                clock === WALL_CLOCK
                  ? "generated tokens over the steps' own wall time (prefill of admitted requests included; pauses and time between steps left out): the same live and replayed"
                  : isProfileClock(clock)
                    ? 'draft and verify priced by its measured forwards, acceptance from these models'
                    : 'draft and verify priced on the device, acceptance from these models'
              }
            />
          </dd>
          <dt>acceptance</dt>
          <dd title="MAT: accepted draft tokens per request-step (bonus excluded); length: tokens emitted per request-step; utilisation: accepted ÷ verified drafts">
            MAT {formatNumber(metrics.meanAcceptedTokens)} · length {formatNumber(metrics.meanAcceptanceLength)} · utilisation {formatNumber(metrics.draftUtilisation)}
          </dd>
          <dt>TPOT p50 / p99</dt>
          <dd data-testid="tpot">
            {formatNumber(metrics.tpotP50Ms, 1)} / {formatNumber(metrics.tpotP99Ms, 1)} ms{' '}
            <ClockTag clock={WALL_CLOCK} note={clock === WALL_CLOCK ? undefined : 'time per output token is measured per request on the wall clock; the modelled clock prices steps, not requests'} />
          </dd>
          {modelledSplit ? (
            <>
              <dt>per step</dt>
              <dd data-testid="step-time" title="mean modelled time per step spent drafting and verifying (prefill is not modelled)">
                draft {formatNumber(modelledSplit.draftMs, 2)} · verify {formatNumber(modelledSplit.verifyMs, 2)} ms <ClockTag clock={clock} />
              </dd>
            </>
          ) : (
            metrics.stepTime && (
              <>
                <dt>per step</dt>
                <dd data-testid="step-time" title="mean wall time per step: drafting, verification, prefill of admitted requests">
                  draft {formatNumber(metrics.stepTime.draftMs, 1)} · verify {formatNumber(metrics.stepTime.verifyMs, 1)} · prefill {formatNumber(metrics.stepTime.prefillMs, 1)} ms{' '}
                  <ClockTag clock={WALL_CLOCK} />
                </dd>
              </>
            )
          )}
          {draftWindow && (
            <>
              <dt>draft window</dt>
              <dd data-testid="draft-window" title="the draft saw each request's first rows (sinks) and the rows just before each drafted token">
                {draftWindow.sink} sink · {draftWindow.recent} recent rows
              </dd>
            </>
          )}
          {compare && <ComparisonLine run={metrics} kept={compare} clock={clock} points={points} totals={totals} />}
          {metrics.speedupVsAr !== undefined && (
            <>
              <dt>speedup vs ar</dt>
              <dd>
                {formatNumber(metrics.speedupVsAr)}× <ClockTag clock={WALL_CLOCK} />
              </dd>
            </>
          )}
        </dl>
      )}
      {!hasPoints ? (
        <p className="muted">Metrics appear as steps stream in.</p>
      ) : (
        <div className="metric-charts">
          {METRIC_KEYS.map((metric, order) => (
            <MetricPanel key={metric} metric={metric} order={order} compare={compare} runLabel={runLabel} clock={clock} />
          ))}
        </div>
      )}
    </section>
  );
}
