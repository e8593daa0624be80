// One palette for every view, so a state has the same colour on the canvas, in SVG and in charts.
import type { NodeState } from '../studio/nodeStates.js';

export const STATE_COLOURS: Record<NodeState, string> = {
  accepted: '#2f9e44',
  rejected: '#e03131',
  unreached: '#f59f00',
  pruned: '#adb5bd',
};

export const STATE_LABELS: Record<NodeState, string> = {
  accepted: 'accepted',
  rejected: 'rejected',
  unreached: 'verified, not reached',
  pruned: 'pruned (never verified)',
};

export const GRANT_COLOURS = { depth: '#1971c2', width: '#9c36b5' } as const;
export const GRANT_LABELS = { depth: 'added by depth extension', width: 'added by width expansion' } as const;

export const GATE_COLOURS = { pass: '#2f9e44', truncate: '#e03131', none: '#f1f3f5' } as const;

export const BUDGET_COLOURS = {
  roots: '#495057',
  base: '#74c0fc',
  depth: GRANT_COLOURS.depth,
  width: GRANT_COLOURS.width,
  unused: '#dee2e6',
} as const;

export const EDGE_COLOUR = '#ced4da';
export const PATH_COLOUR = '#2f9e44';
export const SELECTION_COLOUR = '#1c7ed6';
export const COMPARE_COLOUR = '#868e96';
