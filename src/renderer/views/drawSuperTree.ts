// Draws a packed forest of draft trees on a 2D canvas: edges, nodes coloured by state, rings for
// depth/width grants, the accepted path in bold, gate markers in the column left of each tree.
import { GATE_OUTCOMES, gateOutcome, type GateOutcome, type StepEvent } from '../../shared/events.js';
import { grantMark, nodeStates, type NodeState } from '../studio/nodeStates.js';
import type { PackedForest } from '../studio/treeLayout.js';
import { IDENTITY, type ViewTransform } from '../studio/viewTransform.js';
import { visibleText } from '../studio/tokens.js';
import { EDGE_COLOUR, LABEL_COLOUR, GATE_COLOURS, GRANT_COLOURS, PATH_COLOUR, SELECTION_COLOUR, STATE_COLOURS } from './colors.js';

export interface DrawOptions {
  width: number;
  height: number;
  selectedRequestId: string | null;
  /** Zoom and pan (identity: the whole forest fits the canvas). */
  view?: ViewTransform;
}

/** Text drawn on the canvas is this size on screen whatever the zoom; what would not fit is left out. */
const LABEL_FONT = '11px system-ui, sans-serif';
/** A node's token text shows once the node is this many screen pixels across. */
const TOKEN_TEXT_MIN_NODE = 14;
const TOKEN_TEXT_MAX_CHARS = 10;

export function drawSuperTree(ctx: CanvasRenderingContext2D, step: StepEvent, forest: PackedForest, options: DrawOptions): void {
  const view = options.view ?? IDENTITY;
  const radius = Math.max(1.2, Math.min(forest.slot, forest.rowHeight) * 0.36);
  // Small nodes are drawn as squares: a rect path is much cheaper than an arc and reads the same.
  const asSquares = radius * view.scale < 3;
  ctx.save();
  ctx.translate(view.x, view.y);
  ctx.scale(view.scale, view.scale);
  // What of the forest is on screen: trees outside it are skipped when zoomed in.
  const visible = { left: -view.x / view.scale, top: -view.y / view.scale, right: (options.width - view.x) / view.scale, bottom: (options.height - view.y) / view.scale };
  const labels: Array<{ text: string; x: number; y: number; width: number }> = [];
  const tokenTexts: Array<{ text: string; x: number; y: number }> = [];
  const showTokens = 2 * radius * view.scale >= TOKEN_TEXT_MIN_NODE;

  // Coordinates batched by colour in flat arrays: one path per colour, no object per node.
  const byState: Record<NodeState, number[]> = { accepted: [], rejected: [], unreached: [], pruned: [] };
  const rings: Record<'depth' | 'width', number[]> = { depth: [], width: [] };
  const edges: number[] = [];
  const pathEdges: number[] = [];
  const gateMarks: Record<GateOutcome, number[]> = { pass: [], truncate: [], waived: [] };
  const { slot, rowHeight, labelHeight, gap } = forest;

  for (const tree of forest.trees) {
    if (tree.left > visible.right || tree.left + tree.width < visible.left || tree.top > visible.bottom || tree.top + tree.height < visible.top) continue;
    const req = step.requests[tree.requestIndex];
    const states = nodeStates(req);
    const { x: slotX, row } = tree.layout;
    const left = tree.left + gap;
    const top = tree.top + labelHeight + rowHeight / 2;
    const nodes = req.nodes;
    // Node ids are positions in the list (events.ts); fall back to a lookup if a writer differs.
    const idsArePositions = nodes.every((n, i) => n.id === i);
    const index = idsArePositions ? null : new Map(nodes.map((n, i) => [n.id, i]));
    for (let i = 0; i < nodes.length; i += 1) {
      const n = nodes[i];
      const px = left + slotX[i] * slot;
      const py = top + row[i] * rowHeight;
      byState[states[i]].push(px, py);
      if (showTokens && n.verified && n.text !== undefined) tokenTexts.push({ text: n.text, x: px, y: py });
      const mark = grantMark(n.grant, n.verified);
      if (mark !== null) rings[mark].push(px, py);
      // Pruned nodes (most of a drafted tree) stand as faint dots without edges: the verified
      // tree reads clearly and the canvas strokes a fifth of the lines.
      if (n.parent < 0 || !n.verified) continue;
      const p = index ? index.get(n.parent) : n.parent;
      if (p === undefined || p >= nodes.length) continue;
      (states[i] === 'accepted' ? pathEdges : edges).push(left + slotX[p] * slot, top + row[p] * rowHeight, px, py);
    }
    // Request labels are drawn after the trees, in screen space, only where they fit unsqueezed.
    labels.push({ text: req.requestId, x: left, y: tree.top, width: tree.width - gap });
    for (const gate of req.gates) gateMarks[gateOutcome(gate)].push(tree.left + gap * 0.2, top + (gate.depth + 1) * rowHeight);
    if (tree.requestId === options.selectedRequestId) {
      ctx.strokeStyle = SELECTION_COLOUR;
      ctx.lineWidth = 2;
      ctx.strokeRect(tree.left + 1, tree.top + 1, tree.width - 2, tree.height - 2);
    }
  }

  strokeSegments(ctx, edges, EDGE_COLOUR, 1);
  strokeSegments(ctx, pathEdges, PATH_COLOUR, Math.max(1.5, radius * 0.6));
  fillDots(ctx, byState.pruned, Math.max(0.8, radius * 0.6), STATE_COLOURS.pruned, true);
  for (const state of ['unreached', 'rejected', 'accepted'] as const) fillDots(ctx, byState[state], radius, STATE_COLOURS[state], asSquares);
  const ringWidth = Math.max(1, radius * 0.5);
  strokeRings(ctx, rings.depth, radius + ringWidth / 2, GRANT_COLOURS.depth, ringWidth, asSquares);
  strokeRings(ctx, rings.width, radius + ringWidth / 2, GRANT_COLOURS.width, ringWidth, asSquares);
  // Gate markers: a short bar in the column left of the tree at the gated depth's row.
  const markWidth = Math.max(2, gap * 0.5);
  const markHeight = Math.max(2, rowHeight * 0.6);
  for (const outcome of GATE_OUTCOMES) {
    const xy = gateMarks[outcome];
    if (xy.length === 0) continue;
    ctx.fillStyle = GATE_COLOURS[outcome];
    ctx.beginPath();
    for (let i = 0; i < xy.length; i += 2) ctx.rect(xy[i], xy[i + 1] - markHeight / 2, markWidth, markHeight);
    ctx.fill();
  }
  ctx.restore();
  drawScreenText(ctx, view, labels, tokenTexts, labelHeight, radius);
}

/** Request ids over their trees and token text beside big-enough nodes, at one legible size. */
function drawScreenText(
  ctx: CanvasRenderingContext2D,
  view: ViewTransform,
  labels: ReadonlyArray<{ text: string; x: number; y: number; width: number }>,
  tokens: ReadonlyArray<{ text: string; x: number; y: number }>,
  labelHeight: number,
  radius: number,
): void {
  ctx.font = LABEL_FONT;
  ctx.textBaseline = 'top';
  ctx.fillStyle = LABEL_COLOUR;
  // A label needs its own row above the tree (or, without one, room once zoomed in).
  const room = (labelHeight > 0 ? labelHeight : radius * 3) * view.scale;
  if (room >= 11) {
    for (const label of labels) {
      const width = label.width * view.scale;
      if (ctx.measureText(label.text).width > width) continue;
      ctx.fillText(label.text, label.x * view.scale + view.x, label.y * view.scale + view.y + 1);
    }
  }
  if (tokens.length === 0) return;
  ctx.textBaseline = 'middle';
  const offset = radius * view.scale + 3;
  for (const token of tokens) {
    const text = visibleText(token.text);
    const shown = text.length > TOKEN_TEXT_MAX_CHARS ? `${text.slice(0, TOKEN_TEXT_MAX_CHARS - 1)}…` : text;
    ctx.fillText(shown, token.x * view.scale + view.x + offset, token.y * view.scale + view.y);
  }
}

function strokeSegments(ctx: CanvasRenderingContext2D, xy: number[], colour: string, width: number): void {
  if (xy.length === 0) return;
  ctx.beginPath();
  for (let i = 0; i < xy.length; i += 4) {
    ctx.moveTo(xy[i], xy[i + 1]);
    ctx.lineTo(xy[i + 2], xy[i + 3]);
  }
  ctx.strokeStyle = colour;
  ctx.lineWidth = width;
  ctx.stroke();
}

function fillDots(ctx: CanvasRenderingContext2D, xy: number[], r: number, colour: string, asSquares: boolean): void {
  if (xy.length === 0) return;
  ctx.beginPath();
  // Squares on whole pixels: the rasteriser fills them without anti-aliasing work, which is most
  // of the canvas's cost at batch 64 (thousands of nodes per frame).
  const size = Math.max(1, Math.round(2 * r));
  const half = Math.floor(size / 2);
  for (let i = 0; i < xy.length; i += 2) {
    if (asSquares) {
      ctx.rect(Math.round(xy[i]) - half, Math.round(xy[i + 1]) - half, size, size);
    } else {
      ctx.moveTo(xy[i] + r, xy[i + 1]);
      ctx.arc(xy[i], xy[i + 1], r, 0, Math.PI * 2);
    }
  }
  ctx.fillStyle = colour;
  ctx.fill();
}

function strokeRings(ctx: CanvasRenderingContext2D, xy: number[], r: number, colour: string, width: number, asSquares: boolean): void {
  if (xy.length === 0) return;
  ctx.beginPath();
  for (let i = 0; i < xy.length; i += 2) {
    if (asSquares) {
      ctx.rect(xy[i] - r, xy[i + 1] - r, 2 * r, 2 * r);
    } else {
      ctx.moveTo(xy[i] + r, xy[i + 1]);
      ctx.arc(xy[i], xy[i + 1], r, 0, Math.PI * 2);
    }
  }
  ctx.strokeStyle = colour;
  ctx.lineWidth = width;
  ctx.stroke();
}
