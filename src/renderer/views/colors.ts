// One palette for every view, so a state has the same colour on the canvas, in SVG and in charts.
// Tuned for the shell's dark theme.
import type { NodeState } from '../studio/nodeStates.js';

export const STATE_COLOURS: Record<NodeState, string> = {
  accepted: '#34d399',
  rejected: '#f87171',
  unreached: '#fbbf24',
  pruned: '#4b5567',
};

export const STATE_LABELS: Record<NodeState, string> = {
  accepted: 'accepted',
  rejected: 'rejected',
  unreached: 'verified, not reached',
  pruned: 'pruned (never verified)',
};

/** A layer never verified: no outcome (the histograms' third class). */
export const UNVERIFIED_COLOUR = STATE_COLOURS.pruned;

export const GRANT_COLOURS = { depth: '#60a5fa', width: '#d08bff' } as const;
export const GRANT_LABELS = { depth: 'added by depth extension', width: 'added by width expansion' } as const;

export const GATE_COLOURS = { pass: '#34d399', truncate: '#f87171', waived: '#fbbf24', none: '#232a3a' } as const;

export const BUDGET_COLOURS = {
  roots: '#64748b',
  base: '#5eead4',
  depth: GRANT_COLOURS.depth,
  width: GRANT_COLOURS.width,
  unused: '#2c3446',
} as const;

export const EDGE_COLOUR = '#3a4357';
export const PATH_COLOUR = '#34d399';
export const SELECTION_COLOUR = '#5eead4';
export const COMPARE_COLOUR = '#8b95a8';
export const LABEL_COLOUR = '#8b95a8';
export const GRID_LINE_COLOUR = '#242c3d';
