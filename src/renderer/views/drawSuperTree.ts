// Draws a packed forest of draft trees on a 2D canvas: edges, nodes coloured by state, rings for
// depth/width grants, the accepted path in bold, gate markers in the column left of each tree.
import type { StepEvent } from '../../shared/events.js';
import { grantMark, nodeStates, type NodeState } from '../studio/nodeStates.js';
import { nodePosition, type PackedForest } from '../studio/treeLayout.js';
import { EDGE_COLOUR, LABEL_COLOUR, GATE_COLOURS, GRANT_COLOURS, PATH_COLOUR, SELECTION_COLOUR, STATE_COLOURS } from './colors.js';

export interface DrawOptions {
  width: number;
  height: number;
  selectedRequestId: string | null;
}

export function drawSuperTree(ctx: CanvasRenderingContext2D, step: StepEvent, forest: PackedForest, options: DrawOptions): void {
  ctx.clearRect(0, 0, options.width, options.height);
  const radius = Math.max(1.2, Math.min(forest.slot, forest.rowHeight) * 0.36);
  ctx.font = '10px system-ui, sans-serif';
  ctx.textBaseline = 'top';

  // Batch by colour: one path per state is far cheaper than a fill per node.
  const byState: Record<NodeState, number[]> = { accepted: [], rejected: [], unreached: [], pruned: [] };
  const rings: Record<'depth' | 'width', number[]> = { depth: [], width: [] };
  const edges: number[] = [];
  const pathEdges: number[] = [];

  for (const tree of forest.trees) {
    const req = step.requests[tree.requestIndex];
    const states = nodeStates(req);
    const index = new Map<number, number>();
    req.nodes.forEach((n, i) => index.set(n.id, i));
    req.nodes.forEach((n, i) => {
      const p = nodePosition(forest, tree, i);
      byState[states[i]].push(p.x, p.y);
      const mark = grantMark(n.grant, n.verified);
      if (mark !== null) rings[mark].push(p.x, p.y);
      const parentIndex = index.get(n.parent);
      if (parentIndex === undefined) return;
      const q = nodePosition(forest, tree, parentIndex);
      const onPath = states[i] === 'accepted';
      (onPath ? pathEdges : edges).push(q.x, q.y, p.x, p.y);
    });

    if (forest.labelHeight > 0) {
      ctx.fillStyle = LABEL_COLOUR;
      ctx.fillText(req.requestId, tree.left + forest.gap, tree.top + 1, Math.max(8, tree.width - forest.gap));
    }
    // Gate markers: a short bar in the gap column at the gated depth's row, green pass / red cut.
    for (const gate of req.gates) {
      const y = tree.top + forest.labelHeight + (gate.depth + 1 + 0.5) * forest.rowHeight;
      ctx.fillStyle = gate.pass ? GATE_COLOURS.pass : GATE_COLOURS.truncate;
      const w = Math.max(2, forest.gap * 0.5);
      ctx.fillRect(tree.left + forest.gap * 0.2, y - Math.max(1, forest.rowHeight * 0.3), w, Math.max(2, forest.rowHeight * 0.6));
    }
    if (tree.requestId === options.selectedRequestId) {
      ctx.strokeStyle = SELECTION_COLOUR;
      ctx.lineWidth = 2;
      ctx.strokeRect(tree.left + 1, tree.top + 1, tree.width - 2, tree.height - 2);
    }
  }

  strokeSegments(ctx, edges, EDGE_COLOUR, 1);
  strokeSegments(ctx, pathEdges, PATH_COLOUR, Math.max(1.5, radius * 0.6));
  for (const state of ['pruned', 'unreached', 'rejected', 'accepted'] as const) fillDots(ctx, byState[state], radius, STATE_COLOURS[state]);
  const ringWidth = Math.max(1, radius * 0.5);
  strokeRings(ctx, rings.depth, radius + ringWidth / 2, GRANT_COLOURS.depth, ringWidth);
  strokeRings(ctx, rings.width, radius + ringWidth / 2, GRANT_COLOURS.width, ringWidth);
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

function fillDots(ctx: CanvasRenderingContext2D, xy: number[], r: number, colour: string): void {
  if (xy.length === 0) return;
  ctx.beginPath();
  for (let i = 0; i < xy.length; i += 2) {
    ctx.moveTo(xy[i] + r, xy[i + 1]);
    ctx.arc(xy[i], xy[i + 1], r, 0, Math.PI * 2);
  }
  ctx.fillStyle = colour;
  ctx.fill();
}

function strokeRings(ctx: CanvasRenderingContext2D, xy: number[], r: number, colour: string, width: number): void {
  if (xy.length === 0) return;
  ctx.beginPath();
  for (let i = 0; i < xy.length; i += 2) {
    ctx.moveTo(xy[i] + r, xy[i + 1]);
    ctx.arc(xy[i], xy[i + 1], r, 0, Math.PI * 2);
  }
  ctx.strokeStyle = colour;
  ctx.lineWidth = width;
  ctx.stroke();
}
