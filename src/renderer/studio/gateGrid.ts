// The gate-decision grid: requests down, recent steps across, one cell per gated depth per step.
import { gateOutcome, type GateOutcome } from '../../shared/events.js';
import type { GateStep } from './digest.js';

export type { GateOutcome };

export interface GateCell {
  outcome: GateOutcome;
  confidence: number;
  tau: number;
}

export interface GateGrid {
  /** Row labels, in order of first appearance across the window. */
  requests: string[];
  /** Column groups: the steps in the window, oldest first. */
  steps: number[];
  /** Columns within each step group: every depth gated anywhere in the window, ascending. */
  depths: number[];
  /** cells[row][stepIndex * depths.length + depthIndex]; null where no gate was checked. */
  cells: (GateCell | null)[][];
}

/**
 * Builds the grid over the last `window` steps given. Rows are the requests of the newest step
 * (the batch in flight), in its order, so a row stays put while its request lives; with
 * `includeRetired`, requests that left during the window follow below.
 */
export function buildGateGrid(steps: readonly GateStep[], window: number, includeRetired = false): GateGrid {
  const recent = steps.slice(Math.max(0, steps.length - window));
  const requestRow = new Map<string, number>();
  const depthSet = new Set<number>();
  const newest = recent[recent.length - 1];
  if (newest) for (const req of newest.requests) requestRow.set(req.requestId, requestRow.size);
  for (const step of recent) {
    for (const req of step.requests) {
      if (includeRetired && !requestRow.has(req.requestId)) requestRow.set(req.requestId, requestRow.size);
      for (const gate of req.gates) depthSet.add(gate.depth);
    }
  }
  const depths = [...depthSet].sort((a, b) => a - b);
  const depthColumn = new Map(depths.map((d, i) => [d, i]));
  const width = recent.length * depths.length;
  const cells: (GateCell | null)[][] = [...requestRow.keys()].map(() => new Array<GateCell | null>(width).fill(null));
  recent.forEach((step, stepIndex) => {
    for (const req of step.requests) {
      const rowIndex = requestRow.get(req.requestId);
      if (rowIndex === undefined) continue;
      const row = cells[rowIndex];
      for (const gate of req.gates) {
        const column = stepIndex * depths.length + (depthColumn.get(gate.depth) ?? 0);
        row[column] = { outcome: gateOutcome(gate), confidence: gate.confidence, tau: gate.tau };
      }
    }
  });
  return { requests: [...requestRow.keys()], steps: recent.map((s) => s.step), depths, cells };
}

/** Truncations (and failed checks whose cut was waived) per gated depth over the grid, for the legend. */
export function truncationRates(grid: GateGrid): Array<{ depth: number; checks: number; truncated: number; waived: number }> {
  return grid.depths.map((depth, d) => {
    let checks = 0;
    let truncated = 0;
    let waived = 0;
    for (const row of grid.cells) {
      for (let s = 0; s < grid.steps.length; s += 1) {
        const cell = row[s * grid.depths.length + d];
        if (cell === null) continue;
        checks += 1;
        if (cell.outcome === 'truncate') truncated += 1;
        if (cell.outcome === 'waived') waived += 1;
      }
    }
    return { depth, checks, truncated, waived };
  });
}
