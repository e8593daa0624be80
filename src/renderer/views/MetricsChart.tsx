// Metrics over time (throughput, MAT, draft utilisation, verified tokens per step), computed per
// step from the stream; compare mode overlays a kept run (e.g. echo against static).
import { memo, useMemo, useRef, useState, type FormEvent } from 'react';
import { CartesianGrid, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts';
import type { RunMetrics } from '../../shared/events.js';
import { compareRuns } from '../../shared/step-costs.js';
import { METRIC_KEYS, metricSeries, overlaySeries, thinSeries, type MetricKey, type StepPoint } from '../studio/series.js';
import type { ComparisonRun, StudioState } from '../studio/store.js';
import { formatNumber } from '../studio/tokens.js';
import { COMPARE_COLOUR, GRANT_COLOURS } from './colors.js';
import { CLOCK_OPTIONS, clockName, isProfileClock, stepTimer, throughputOf, WALL_CLOCK } from '../studio/clock.js';
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

const ratio = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(3)}×` : '–');

/** This run against the kept one: how much faster, and whether from fewer steps or cheaper ones. */
function ComparisonLine({ run, kept, label, clock, points, keptPoints }: { run: RunMetrics; kept: RunMetrics; label: string; clock: string; points: StepPoint[]; keptPoints: StepPoint[] }) {
  const c = compareRuns(run, kept);
  if (clock !== WALL_CLOCK) {
    const speedup = throughputOf(points, clock) / throughputOf(keptPoints, clock);
    return (
      <>
        <dt>against {label}</dt>
        <dd data-testid="run-comparison" title={`both runs' steps priced on the ${clockName(clock)} clock (draft and verify; prefill left out)`}>
          {ratio(speedup)} its throughput ({clockName(clock)})
        </dd>
      </>
    );
  }
  return (
    <>
      <dt>against {label}</dt>
      <dd
        data-testid="run-comparison"
        title={
          c.steps
            ? `same requests and tokens: throughput ÷ ${label}'s is about its steps ÷ these steps ÷ the time of a step; "at its step cost" prices these steps at ${label}'s (prefill as measured): what taking fewer steps buys on its own`
            : `other requests or tokens than ${label}'s: steps do not compare`
        }
      >
        {ratio(c.throughput)} its throughput
        {c.steps && ` · ${c.steps.run} steps to its ${c.steps.base} · ${ratio(c.steps.stepTime)} its time a step · ${ratio(c.steps.sched)} at its step cost`}
      </dd>
    </>
  );
}

function runLabelOf(state: Pick<StudioState, 'config' | 'metrics'>): string {
  return state.config?.policy ?? state.metrics?.policy ?? 'this run';
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
          <dd>{metrics.policy}</dd>
          <dt>throughput</dt>
          <dd data-testid="throughput">
            {clock === WALL_CLOCK ? formatNumber(metrics.throughput, 1) : formatNumber(throughputOf(points, clock), 1)} tok/s ({clockName(clock)}
            {clock === WALL_CLOCK ? '' : isProfileClock(clock) ? ': draft and verify priced by its measured forwards, acceptance from these models' : ': draft and verify priced on the device, acceptance from these models'})
          </dd>
          <dt>MAT</dt>
          <dd>{formatNumber(metrics.meanAcceptedTokens)}</dd>
          <dt>accept length</dt>
          <dd>{formatNumber(metrics.meanAcceptanceLength)}</dd>
          <dt>utilisation</dt>
          <dd>{formatNumber(metrics.draftUtilisation)}</dd>
          <dt>TPOT p50 / p99</dt>
          <dd>
            {formatNumber(metrics.tpotP50Ms, 1)} / {formatNumber(metrics.tpotP99Ms, 1)} ms
          </dd>
          {metrics.stepTime && (
            <>
              <dt>per step</dt>
              <dd data-testid="step-time" title="mean wall time per step: drafting, verification, prefill of admitted requests, the rest">
                draft {formatNumber(metrics.stepTime.draftMs, 1)} · verify {formatNumber(metrics.stepTime.verifyMs, 1)} · prefill{' '}
                {formatNumber(metrics.stepTime.prefillMs, 1)} ms
              </dd>
            </>
          )}
          {draftWindow && (
            <>
              <dt>draft window</dt>
              <dd data-testid="draft-window" title="the draft saw each request's first rows (sinks) and the rows just before each drafted token">
                {draftWindow.sink} sink · {draftWindow.recent} recent rows
              </dd>
            </>
          )}
          {compare?.metrics && <ComparisonLine run={metrics} kept={compare.metrics} label={compare.label} clock={clock} points={points} keptPoints={compare.points} />}
          {metrics.speedupVsAr !== undefined && (
            <>
              <dt>speedup vs ar</dt>
              <dd>{formatNumber(metrics.speedupVsAr)}×</dd>
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
