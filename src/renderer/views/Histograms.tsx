// Accepted vs rejected layer confidence per depth (binned in the engine), with the layers never
// verified (a gate cut them, or the budget left them out) as a third class: no outcome, not in the
// AUC. AUC per depth, sweet-spot
// markers, and τ_d as a line that can be dragged (or nudged with arrow keys): releasing it sends
// knobs.set, which the engine applies from its next step without restarting the run.
import type { ConfidenceSignal } from '../../shared/config.js';
import { memo, useCallback, useRef, useState } from 'react';
import { Bar, BarChart, CartesianGrid, XAxis, YAxis } from 'recharts';
import type { DepthHistogram } from '../../shared/events.js';
import { stepConfidenceSignal } from '../../shared/trace-schema.js';
import { calibrationHeadline, calibrationReason, histogramBins, pointerFromTau, sampleCount, stepTau, sweetSpot, tauFromPointer, tausInUse, unverifiedCount } from '../studio/histograms.js';
import type { CalibrationSummary } from '../../shared/messages.js';
import type { StudioState } from '../studio/store.js';
import { isGatedPolicy } from '../../shared/config.js';
import { formatNumber, formatProbability } from '../studio/tokens.js';
import { STATE_COLOURS, UNVERIFIED_COLOUR } from './colors.js';
import { useOnScreen, useSend, useStudio, useStudioStore, useThrottledStudio } from './StudioContext.js';
import { useCanvasSize } from './useCanvas.js';

const CHART_HEIGHT = 120;
const MARGIN = { top: 8, right: 10, bottom: 4, left: 0 };
const Y_AXIS_WIDTH = 34;

const sameRecord = (a: Record<string, number>, b: Record<string, number>): boolean => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
};
const SIGNAL_HELP: Record<ConfidenceSignal, string> = {
  'path-prob': "the draft's probability of the best path to the depth (the paper's c_d)",
  'path-margin': "the best path's probability with each step renormalised over its parent's two best candidates: how clearly the draft preferred each token to its runner-up",
};
const selectEngineTaus = (s: StudioState): Record<string, number> => tausInUse(s.latestStep);
const selectDepths = (s: StudioState): number[] => s.histograms.map((h) => h.depth);
const sameNumbers = (a: number[], b: number[]): boolean => a.length === b.length && a.every((v, i) => v === b[i]);
/** Update cadence of the charts (ms) and the spacing of their phases within it. */
const CHART_INTERVAL_MS = 1000;
const CHART_PHASE_STEP_MS = 60;

interface TauLineProps {
  depth: number;
  tau: number;
  plotLeft: number;
  plotWidth: number;
  onCommit(tau: number): void;
}

/** The draggable τ line over a chart's plot area. Local state while dragging; commit on release. */
function TauLine({ depth, tau, plotLeft, plotWidth, onCommit }: TauLineProps) {
  const [dragging, setDragging] = useState<number | null>(null);
  const overlayRef = useRef<HTMLDivElement>(null);
  const shown = dragging ?? tau;
  const x = pointerFromTau(shown, plotLeft, plotWidth);
  const valueAt = (clientX: number): number => {
    const rect = overlayRef.current?.getBoundingClientRect();
    return tauFromPointer(clientX - (rect?.left ?? 0), plotLeft, plotWidth);
  };
  return (
    <div className="tau-overlay" ref={overlayRef} style={{ height: CHART_HEIGHT }}>
      <div
        className={`tau-line${dragging !== null ? ' dragging' : ''}`}
        role="slider"
        tabIndex={0}
        aria-label={`τ at depth ${depth}`}
        aria-valuemin={0}
        aria-valuemax={1}
        aria-valuenow={shown}
        data-testid={`tau-line-${depth}`}
        style={{ left: x - 8, top: MARGIN.top, height: CHART_HEIGHT - MARGIN.top - 24 }}
        onPointerDown={(e) => {
          e.currentTarget.setPointerCapture(e.pointerId);
          setDragging(valueAt(e.clientX));
        }}
        onPointerMove={(e) => {
          if (dragging !== null) setDragging(valueAt(e.clientX));
        }}
        onPointerUp={(e) => {
          if (dragging === null) return;
          const value = valueAt(e.clientX);
          setDragging(null);
          onCommit(value);
        }}
        onPointerCancel={() => setDragging(null)}
        // A release on the line is a drag, not a click on the chart (which would place the gate).
        onClick={(e) => e.stopPropagation()}
        onKeyDown={(e) => {
          const direction = e.key === 'ArrowRight' || e.key === 'ArrowUp' ? 1 : e.key === 'ArrowLeft' || e.key === 'ArrowDown' ? -1 : 0;
          if (direction === 0) return;
          e.preventDefault();
          onCommit(stepTau(tau, direction));
        }}
      >
        <span className="tau-label">τ {formatProbability(shown)}</span>
      </div>
    </div>
  );
}

const DepthChart = memo(function DepthChart({
  depth,
  order,
  tau,
  engineTau,
  onTau,
  editable,
  onRemove,
  reason,
  calibration,
}: {
  depth: number;
  /** Position in the list; spreads the charts' re-renders over the update interval. */
  order: number;
  tau: number | undefined;
  engineTau: number | undefined;
  onTau(depth: number, tau: number): void;
  /** Gates can be added, moved and removed (a live run of a gated policy). */
  editable: boolean;
  onRemove(depth: number): void;
  /** Why the calibration gated this depth or not. */
  reason: string | null;
  calibration: CalibrationSummary | undefined;
}) {
  const slotRef = useRef<HTMLDivElement>(null);
  const onScreen = useOnScreen(slotRef);
  const selectHistogram = useCallback((s: StudioState): DepthHistogram | undefined => s.histograms.find((h) => h.depth === depth), [depth]);
  const histogram = useThrottledStudio(selectHistogram, CHART_INTERVAL_MS, Object.is, (order * CHART_PHASE_STEP_MS) % CHART_INTERVAL_MS, onScreen);
  return (
    <div ref={slotRef} className="depth-chart-slot">
      {histogram !== undefined && (
        <DepthChartBody histogram={histogram} tau={tau} engineTau={engineTau} onTau={onTau} editable={editable} onRemove={onRemove} reason={reason} calibration={calibration} />
      )}
    </div>
  );
});

function DepthChartBody({
  histogram,
  tau,
  engineTau,
  onTau,
  editable,
  onRemove,
  reason,
  calibration,
}: {
  histogram: DepthHistogram;
  tau: number | undefined;
  engineTau: number | undefined;
  onTau(depth: number, tau: number): void;
  editable: boolean;
  onRemove(depth: number): void;
  reason: string | null;
  calibration: CalibrationSummary | undefined;
}) {
  const boxRef = useRef<HTMLDivElement>(null);
  const { width } = useCanvasSize(boxRef);
  const bins = histogramBins(histogram);
  const plotLeft = MARGIN.left + Y_AXIS_WIDTH;
  const plotWidth = Math.max(0, width - plotLeft - MARGIN.right);
  // The badge holds still while steps stream: the calibration's verdict, or this run's AUC with hysteresis.
  const shown = useRef(false);
  const sweet = sweetSpot(histogram, calibration, shown.current);
  shown.current = sweet.on;
  const unverified = unverifiedCount(histogram);
  return (
    <figure className="depth-chart" data-testid={`histogram-${histogram.depth}`} data-samples={sampleCount(histogram)}>
      <figcaption>
        <strong>depth {histogram.depth}</strong>
        <span
          data-testid={`live-auc-${histogram.depth}`}
          title="over the layers the target verified in this run so far; at a gated depth only layers that passed the gate are verified, so it can differ from the calibration's, which saw every layer"
        >
          this run: AUC {histogram.auc === null ? '—' : formatNumber(histogram.auc)}
        </span>
        {unverified > 0 && (
          <span
            className="muted"
            data-testid={`unverified-${histogram.depth}`}
            title="layers drafted at this depth that the target never saw (a gate cut them, or the budget left them out): whether they would have been accepted is unknown, so they are neither accepted nor rejected and the AUC leaves them out"
          >
            {unverified} unverified
          </span>
        )}
        {sweet.on && (
          <span
            className="badge sweet"
            data-testid={`sweet-spot-${histogram.depth}`}
            title={
              sweet.source === 'calibration'
                ? "the calibration found this depth's confidence separates accepted from rejected drafts: a good place for a gate"
                : "this run's AUC is above the sweet-spot bar: a good place for a gate"
            }
          >
            sweet spot ({sweet.source === 'calibration' ? 'calibration' : 'this run'})
          </span>
        )}
        {tau !== undefined && <span className="badge gated">gated</span>}
        {editable && tau !== undefined && (
          <button type="button" className="link-button" data-testid={`remove-gate-${histogram.depth}`} onClick={() => onRemove(histogram.depth)}>
            remove gate
          </button>
        )}
        {engineTau !== undefined && tau !== undefined && engineTau !== tau && <span className="pending">engine still at τ {formatProbability(engineTau)}</span>}
        {engineTau !== undefined && (tau === undefined || engineTau === tau) && (
          <span className="muted" data-testid={`engine-tau-${histogram.depth}`}>
            engine τ {formatProbability(engineTau)}
          </span>
        )}
      </figcaption>
      {reason && (
        <p className="calibration-reason" data-testid={`calibration-reason-${histogram.depth}`}>
          {reason}
        </p>
      )}
      <div
        className={`chart-box${editable ? ' editable' : ''}`}
        ref={boxRef}
        data-testid={`chart-box-${histogram.depth}`}
        title={editable ? (tau === undefined ? 'click to put a gate here: τ at the click' : 'click to move the gate here; drag its line') : undefined}
        onClick={
          editable && plotWidth > 0
            ? (e) => {
                const rect = e.currentTarget.getBoundingClientRect();
                onTau(histogram.depth, tauFromPointer(e.clientX - rect.left, plotLeft, plotWidth));
              }
            : undefined
        }
      >
        {width > 0 && (
          <BarChart width={width} height={CHART_HEIGHT} data={bins} margin={MARGIN} barCategoryGap={1} barGap={0}>
            <CartesianGrid strokeDasharray="2 3" vertical={false} />
            <XAxis dataKey="centre" type="number" domain={[0, 1]} ticks={[0, 0.25, 0.5, 0.75, 1]} interval={0} tick={{ fontSize: 10 }} height={20} />
            <YAxis width={Y_AXIS_WIDTH} interval={0} tick={{ fontSize: 10 }} tickFormatter={(v: number) => `${Math.round(v * 100)}%`} />
            <Bar dataKey="accepted" fill={STATE_COLOURS.accepted} isAnimationActive={false} />
            <Bar dataKey="rejected" fill={STATE_COLOURS.rejected} isAnimationActive={false} />
            {unverified > 0 && <Bar dataKey="unverified" fill={UNVERIFIED_COLOUR} isAnimationActive={false} />}
          </BarChart>
        )}
        {width > 0 && tau !== undefined && (
          <TauLine depth={histogram.depth} tau={tau} plotLeft={plotLeft} plotWidth={plotWidth} onCommit={(t) => onTau(histogram.depth, t)} />
        )}
      </div>
    </figure>
  );
}

export function Histograms() {
  // Histograms accumulate over the run; once a second is as fast as a reader can follow them, and
  // re-rendering every chart per frame would cost the main thread more than everything else.
  // Each chart reads its own histogram at its own phase (see DepthChart).
  const depths = useThrottledStudio(selectDepths, CHART_INTERVAL_MS, sameNumbers);
  const engineTaus = useThrottledStudio(selectEngineTaus, 250, sameRecord);
  const knobTaus = useStudio((s) => s.taus);
  const engineKnobs = useStudio((s) => s.engineKnobs);
  const runState = useStudio((s) => s.runState);
  const editable = engineKnobs !== null && isGatedPolicy(engineKnobs.policy) && (runState === 'running' || runState === 'paused');
  const calibration = engineKnobs?.calibration;
  // τ_d are only meaningful in the signal they were calibrated in: say which one this run reads
  // (a replayed version 1 trace names none: its steps are path-prob).
  const signal = useStudio((s) => (s.latestStep ? stepConfidenceSignal(s.latestStep) : null));
  const store = useStudioStore();
  const send = useSend();
  // With the engine's knobs known, its τ_d (and the user's changes since) are the gates; a replay
  // without them shows the τ its gate checks carried.
  const taus = engineKnobs !== null ? knobTaus : { ...engineTaus, ...knobTaus };
  const commit = useCallback(
    (depth: number, tau: number): void => {
      const state = store.getState();
      const current = state.engineKnobs !== null ? { ...state.taus } : { ...tausInUse(state.latestStep), ...state.taus };
      state.setTau(depth, tau);
      send({ type: 'knobs.set', knobs: { taus: { ...current, [String(depth)]: tau } } });
    },
    [store, send],
  );
  const remove = useCallback(
    (depth: number): void => {
      const state = store.getState();
      const { [String(depth)]: _removed, ...rest } = state.taus;
      state.removeTau(depth);
      send({ type: 'knobs.set', knobs: { taus: rest } });
    },
    [store, send],
  );
  const gated = Object.keys(taus).length;
  const headline = calibrationHeadline(calibration, engineKnobs ? Object.keys(engineKnobs.taus).length : gated);
  return (
    <section className="view histograms" aria-label="Confidence histograms">
      <header className="view-header">
        <h2>Layer confidence per depth</h2>
        {signal && (
          <span className="summary" data-testid="confidence-signal" title={SIGNAL_HELP[signal]}>
            signal: {signal}
          </span>
        )}
        <span className="legend-inline">
          <span>
            <span className="swatch dot" style={{ background: STATE_COLOURS.accepted }} /> accepted
          </span>
          <span>
            <span className="swatch dot" style={{ background: STATE_COLOURS.rejected }} /> rejected
          </span>
          <span>
            <span className="swatch dot" style={{ background: UNVERIFIED_COLOUR }} /> never verified (no outcome)
          </span>
          {editable && gated > 0 && <span>drag τ to move a gate</span>}
          {editable && <span data-testid="gate-hint">click a depth's chart to put a gate there</span>}
        </span>
      </header>
      {headline && (
        <p className="calibration-headline" data-testid="calibration-headline">
          {headline}
        </p>
      )}
      {depths.length === 0 ? (
        <p className="muted">Histograms fill as the engine verifies drafts.</p>
      ) : (
        <div className="depth-charts">
          {depths.map((depth, order) => (
            <DepthChart
              key={depth}
              depth={depth}
              order={order}
              tau={taus[String(depth)]}
              engineTau={engineTaus[String(depth)]}
              onTau={commit}
              editable={editable}
              onRemove={remove}
              reason={calibrationReason(calibration, depth)}
              calibration={calibration}
            />
          ))}
        </div>
      )}
    </section>
  );
}
