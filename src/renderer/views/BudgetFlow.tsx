// Where K_max went: the shown step's split as one bar, the transfers from truncated to confident
// requests, and the split over time as a stacked area chart (no animation: it streams).
import { memo, useMemo, useRef } from 'react';
import { Area, AreaChart, CartesianGrid, Tooltip, XAxis, YAxis } from 'recharts';
import type { BudgetSplit, StepEvent } from '../../shared/events.js';
import { mergeTransfers, thinSeries, type StepPoint } from '../studio/series.js';
import { viewedStep, type StudioState } from '../studio/store.js';
import { BUDGET_COLOURS } from './colors.js';
import { useOnScreen, useStudio, useThrottledStudio } from './StudioContext.js';
import { useCanvasSize } from './useCanvas.js';

const PARTS: ReadonlyArray<{ key: keyof BudgetSplit; label: string }> = [
  { key: 'roots', label: 'roots' },
  { key: 'base', label: 'base' },
  { key: 'depth', label: 'depth extension' },
  { key: 'width', label: 'width expansion' },
  { key: 'unused', label: 'unused' },
];

const CHART_POINTS = 200;
const selectPoints = (s: StudioState): StepPoint[] => s.points;
const selectStep = (s: StudioState): StepEvent | null => viewedStep(s);

/** Width of one character of the bar's 10 px bold labels, generously: a label is drawn only where it fits whole. */
const LABEL_CHAR_PX = 6.5;
const LABEL_PADDING_PX = 8;

/** What a segment of `px` pixels can show whole: its name and count, its count, or nothing (its title and the legend say it). */
export function segmentLabel(label: string, tokens: number, px: number): string {
  const fits = (text: string): boolean => text.length * LABEL_CHAR_PX + LABEL_PADDING_PX <= px;
  const full = `${label} ${tokens}`;
  if (fits(full)) return full;
  return fits(String(tokens)) ? String(tokens) : '';
}

/**
 * The step's K_max as one bar, each part exactly as wide as its share of the tokens (a fixed
 * percentage, never grown by its text); a label shows only where it fits whole, and the legend
 * under the bar names every part with its count.
 */
export function BudgetBar({ step }: { step: StepEvent }) {
  const barRef = useRef<HTMLDivElement>(null);
  const { width } = useCanvasSize(barRef);
  const total = PARTS.reduce((sum, { key }) => sum + Math.max(0, step.budget[key]), 0);
  return (
    <div className="budget-bar" ref={barRef} role="img" aria-label={`K_max ${step.kmax} split: ${PARTS.map(({ key, label }) => `${label} ${step.budget[key]}`).join(', ')}`}>
      {PARTS.map(({ key, label }) => {
        const tokens = step.budget[key];
        if (tokens <= 0 || total <= 0) return null;
        const share = tokens / total;
        return (
          <div
            key={key}
            className={`budget-part part-${key}`}
            style={{ width: `${share * 100}%`, background: BUDGET_COLOURS[key] }}
            title={`${label}: ${tokens} tokens`}
            data-testid={`budget-${key}`}
            data-tokens={tokens}
          >
            {segmentLabel(label, tokens, share * width)}
          </div>
        );
      })}
    </div>
  );
}

function RequestLink({ id, onOpen }: { id: string; onOpen?: (id: string) => void }) {
  if (!onOpen) return <>request {id}</>;
  return (
    <button type="button" className="link" onClick={() => onOpen(id)}>
      request {id}
    </button>
  );
}

export function TransferList({ step, onOpen }: { step: StepEvent; onOpen?: (requestId: string) => void }) {
  const transfers = mergeTransfers(step.transfers);
  if (transfers.length === 0) return <p className="muted">No budget moved between requests this step.</p>;
  const total = transfers.reduce((n, t) => n + t.tokens, 0);
  return (
    <div className="transfers">
      <p>
        {total} token{total === 1 ? '' : 's'} moved from truncated to confident requests:
      </p>
      <ul>
        {transfers.slice(0, 12).map((t) => (
          <li key={`${t.from}-${t.to}`}>
            <RequestLink id={t.from} onOpen={onOpen} /> → <RequestLink id={t.to} onOpen={onOpen} />: {t.tokens} token{t.tokens === 1 ? '' : 's'}
          </li>
        ))}
        {transfers.length > 12 && <li className="muted">… and {transfers.length - 12} more</li>}
      </ul>
    </div>
  );
}

/**
 * The split over time, in its own memoised component so the bar above (5 updates a second) never
 * re-renders the chart; the chart itself re-renders once a second.
 */
const BudgetOverTime = memo(function BudgetOverTime() {
  const boxRef = useRef<HTMLDivElement>(null);
  const onScreen = useOnScreen(boxRef);
  const points = useThrottledStudio(selectPoints, 1000, Object.is, 780, onScreen);
  const { width } = useCanvasSize(boxRef);
  const data = useMemo(() => thinSeries(points, CHART_POINTS), [points]);
  return (
    <div className="chart-box" ref={boxRef}>
        {width > 0 && data.length > 0 && (
          <AreaChart width={width} height={170} data={data} margin={{ top: 6, right: 10, bottom: 0, left: 0 }}>
            <CartesianGrid strokeDasharray="2 3" vertical={false} />
            <XAxis dataKey="step" type="number" domain={['dataMin', 'dataMax']} interval={0} tick={{ fontSize: 10 }} height={18} />
            <YAxis width={40} interval={0} tick={{ fontSize: 10 }} />
            <Tooltip isAnimationActive={false} />
            {PARTS.map(({ key, label }) => (
              <Area
                key={key}
                type="stepAfter"
                dataKey={key}
                name={label}
                stackId="budget"
                stroke="none"
                fill={BUDGET_COLOURS[key]}
                fillOpacity={0.95}
                isAnimationActive={false}
                dot={false}
              />
            ))}
          </AreaChart>
        )}
    </div>
  );
});

export function BudgetFlow() {
  const step = useThrottledStudio(selectStep, 200);
  const selectRequest = useStudio((s) => s.selectRequest);
  return (
    <section className="view budget" aria-label="Budget flows">
      <header className="view-header">
        <h2>Budget</h2>
        {step && (
          <span className="summary">
            step {step.step}: {step.verifiedTokens} of K_max {step.kmax} verified
          </span>
        )}
      </header>
      {step ? <BudgetBar step={step} /> : <p className="muted">The split of K_max appears with the first step.</p>}
      <div className="legend-inline" data-testid="budget-legend">
        {PARTS.map(({ key, label }) => (
          <span key={key}>
            <span className="swatch dot" style={{ background: BUDGET_COLOURS[key] }} /> {label}
            {step ? ` ${step.budget[key]}` : ''}
          </span>
        ))}
      </div>
      {step && <TransferList step={step} onOpen={selectRequest} />}
      <BudgetOverTime />
    </section>
  );
}
