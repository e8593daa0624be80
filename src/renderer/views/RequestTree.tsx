// One request's draft tree in SVG: token text, path scores, the confidence of every layer and the
// gate checks, then the request's generated text with each step's accepted tokens marked.
import { useState } from 'react';
import { gateOutcome, type DeepeningStopReason, type RequestStep, type StepEvent } from '../../shared/events.js';
import { grantMark, nodeStates } from '../studio/nodeStates.js';
import type { TextSegment } from '../studio/requestText.js';
import { viewedStep, type StudioState } from '../studio/store.js';
import { formatCompared, formatNumber, formatProbability, tokenLabel, visibleText } from '../studio/tokens.js';
import { layoutTree } from '../studio/treeLayout.js';
import { EDGE_COLOUR, GATE_COLOURS, GRANT_COLOURS, PATH_COLOUR, STATE_COLOURS, STATE_LABELS } from './colors.js';
import { NodeLegend } from './Legend.js';
import { useStudio, useThrottledStudio } from './StudioContext.js';

const SLOT = 78;
const ROW = 62;
const NODE_W = 70;
const NODE_H = 30;
const GUTTER = 170;

interface Selection {
  /** The step the request is shown at: the viewed step, or its last step when it has retired. */
  step: StepEvent | null;
  request: RequestStep | null;
  segments: TextSegment[];
}

const selectRequest = (state: StudioState): Selection => {
  const viewed = viewedStep(state);
  const id = state.selectedRequestId;
  if (id === null) return { step: viewed, request: null, segments: NO_SEGMENTS };
  const segments = state.texts[id] ?? NO_SEGMENTS;
  const inViewed = viewed?.requests.find((r) => r.requestId === id);
  if (viewed && inViewed) return { step: viewed, request: inViewed, segments };
  for (let i = state.steps.length - 1; i >= 0; i -= 1) {
    const step = state.steps[i];
    if (viewed && step.step > viewed.step) continue;
    const request = step.requests.find((r) => r.requestId === id);
    if (request) return { step, request, segments };
  }
  return { step: viewed, request: null, segments };
};

const NO_SEGMENTS: TextSegment[] = [];
// With nothing to show, a new step changes nothing on screen: no re-render.
const sameSelection = (a: Selection, b: Selection): boolean =>
  a.request === b.request && a.segments === b.segments && (a.step === b.step || a.request === null);

/**
 * Pruned nodes (drafted, never verified) usually outnumber the verified ones several times; by
 * default they collapse into a "+n pruned" note under their parent so the verified tree stays legible.
 */
export function RequestTreeSvg({ request: full, showPruned = false }: { request: RequestStep; showPruned?: boolean }) {
  const allStates = nodeStates(full);
  const keep = full.nodes.map((n, i) => showPruned || allStates[i] !== 'pruned' || n.parent < 0);
  const request: RequestStep = { ...full, nodes: full.nodes.filter((_, i) => keep[i]) };
  const states = allStates.filter((_, i) => keep[i]);
  const hiddenChildren = new Map<number, number>();
  full.nodes.forEach((n, i) => {
    if (!keep[i]) hiddenChildren.set(n.parent, (hiddenChildren.get(n.parent) ?? 0) + 1);
  });
  const layout = layoutTree(request);
  const index = new Map(request.nodes.map((n, i) => [n.id, i]));
  const width = GUTTER + layout.width * SLOT + 16;
  const height = layout.rows * ROW + 12;
  const cx = (i: number): number => GUTTER + layout.x[i] * SLOT;
  const cy = (i: number): number => layout.row[i] * ROW + ROW / 2;
  const gateAt = new Map(request.gates.map((g) => [g.depth, g]));
  return (
    <svg className="request-tree" width={width} height={height} role="img" aria-label={`draft tree of request ${request.requestId}`}>
      {Array.from({ length: layout.rows }, (_, row) => {
        const depth = row - 1;
        const gate = gateAt.get(depth);
        const c = request.confidences[depth];
        return (
          <g key={`row-${row}`} className="depth-row">
            <text x={6} y={row * ROW + ROW / 2 - 4} className="depth-label">
              {depth < 0 ? 'root' : `depth ${depth}`}
            </text>
            {c !== undefined && (
              <text x={6} y={row * ROW + ROW / 2 + 10} className="confidence-label">
                c = {gate ? formatCompared(gate.confidence, gate.tau)[0] : formatProbability(c)}
              </text>
            )}
            {gate && (
              <g data-gate={gateOutcome(gate)}>
                <rect x={78} y={row * ROW + ROW / 2 - 11} width={84} height={22} rx={4} fill={GATE_COLOURS[gateOutcome(gate)]} />
                <text x={120} y={row * ROW + ROW / 2 + 4} textAnchor="middle" className="gate-label">
                  {gate.pass ? '>' : '≤'} τ {formatCompared(gate.confidence, gate.tau)[1]}
                </text>
              </g>
            )}
          </g>
        );
      })}
      {request.nodes.map((n, i) => {
        const p = index.get(n.parent);
        if (p === undefined) return null;
        const onPath = states[i] === 'accepted';
        return (
          <line
            key={`e-${n.id}`}
            x1={cx(p)}
            y1={cy(p) + NODE_H / 2}
            x2={cx(i)}
            y2={cy(i) - NODE_H / 2}
            stroke={onPath ? PATH_COLOUR : EDGE_COLOUR}
            strokeWidth={onPath ? 3 : 1.2}
          />
        );
      })}
      {request.nodes.map((n, i) => {
        const mark = grantMark(n.grant, n.verified);
        const label = n.parent < 0 ? 'root' : tokenLabel(n);
        return (
          <g key={`n-${n.id}`} transform={`translate(${cx(i) - NODE_W / 2},${cy(i) - NODE_H / 2})`} data-state={states[i]} data-grant={mark ?? undefined}>
            <title>
              {`${n.parent < 0 ? `root ${tokenLabel(n)}` : label} · token id ${n.token} · ${STATE_LABELS[states[i]]} · log q ${formatNumber(n.logq)} · S ${formatNumber(n.pathScore)}${
                mark ? ` · ${mark === 'depth' ? 'depth extension' : 'width expansion'}` : ''
              }${n.paidBy !== undefined ? ` · paid by request ${n.paidBy}` : ''}`}
            </title>
            <rect
              width={NODE_W}
              height={NODE_H}
              rx={6}
              fill={STATE_COLOURS[states[i]]}
              fillOpacity={states[i] === 'pruned' ? 0.45 : 0.9}
              stroke={mark ? GRANT_COLOURS[mark] : 'none'}
              strokeWidth={mark ? 3 : 0}
              strokeDasharray={mark === 'width' ? '5 3' : undefined}
            />
            <text x={NODE_W / 2} y={13} textAnchor="middle" className="node-token">
              {label.length > 11 ? `${label.slice(0, 10)}…` : label}
            </text>
            <text x={NODE_W / 2} y={25} textAnchor="middle" className="node-score">
              {n.parent < 0 ? '' : `S ${formatNumber(n.pathScore)}`}
            </text>
            {(hiddenChildren.get(n.id) ?? 0) > 0 && (
              <text x={NODE_W / 2} y={NODE_H + 11} textAnchor="middle" className="pruned-note">
                +{hiddenChildren.get(n.id)} pruned
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}

export function GeneratedText({ segments }: { segments: TextSegment[] }) {
  if (segments.length === 0) return <p className="muted">No text generated yet.</p>;
  return (
    <p className="generated-text" aria-label="generated text">
      {segments.map((s, i) => (
        <span key={`${s.step}-${i}`} className={`segment ${i % 2 === 0 ? 'even' : 'odd'}`} title={`step ${s.step}: ${s.acceptedCount} accepted + bonus`}>
          <span className="accepted-tokens">{visibleText(s.accepted)}</span>
          <span className="bonus-token">{visibleText(s.bonus)}</span>
        </span>
      ))}
    </p>
  );
}

const STOP_LABELS: Record<DeepeningStopReason, string> = {
  truncated: 'gate failed',
  'max-depth': 'max depth',
  'no-budget': 'no budget left',
  'no-candidates': 'no candidates',
  'not-worth-its-cost': 'not worth its cost',
  'not-probed': 'waited while others probed drafting',
};

export function RequestView() {
  const [showPruned, setShowPruned] = useState(false);
  const selectedId = useStudio((s) => s.selectedRequestId);
  const clear = useStudio((s) => s.selectRequest);
  // At most 5 updates a second while streaming; once the run stops, the step the Super-Tree shows.
  const streaming = useStudio((s) => s.runState === 'running');
  const { step, request, segments } = useThrottledStudio(selectRequest, streaming ? 200 : 0, sameSelection);
  return (
    <section className="view request-view" aria-label="Request view">
      <header className="view-header">
        <h2>{selectedId === null ? 'Request' : `Request ${selectedId}`}</h2>
        {step && request && (
          <span className="summary">
            step {step.step} · {request.accepted.length} accepted · {request.nodes.filter((n) => n.verified).length - 1} verified drafts
            {request.stop ? ` · stopped deepening at depth ${request.stop.depth} (${STOP_LABELS[request.stop.reason]})` : ''}
            {request.drainWeight !== undefined && request.drainWeight < 1 ? ` · its tokens weighed ×${request.drainWeight.toFixed(2)} (it ends before the slowest request)` : ''}
            {request.finished ? ` · finished (${request.finished})` : ''}
          </span>
        )}
        {selectedId !== null && (
          <label className="inline">
            <input type="checkbox" checked={showPruned} onChange={(e) => setShowPruned(e.target.checked)} /> show pruned nodes
          </label>
        )}
        {selectedId !== null && (
          <button type="button" className="link" onClick={() => clear(null)}>
            close
          </button>
        )}
      </header>
      {selectedId === null ? (
        <p className="muted">Click a request in the Super-Tree to open it.</p>
      ) : (
        <>
          {request ? (
            <>
              <NodeLegend />
              <div className="svg-scroll">
                <RequestTreeSvg request={request} showPruned={showPruned} />
              </div>
            </>
          ) : (
            <p className="muted">Request {selectedId} is not in the recent steps (retired long ago or not yet admitted).</p>
          )}
          <h3>Generated text</h3>
          <GeneratedText segments={segments} />
        </>
      )}
    </section>
  );
}
