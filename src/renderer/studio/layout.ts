// The sizes of the shell's main regions, which the user drags: the widths of the three side
// columns (run controls; histograms; gates, budget and metrics) and the Super-Tree's share of the
// centre column (the request view takes the rest). The centre column takes whatever width is
// left, so a wider column narrows the Super-Tree, never the screen.

export interface PanelLayout {
  /** Widest the run column may be, in CSS pixels (it narrows to its minimum on small screens). */
  side: number;
  right: number;
  far: number;
  /** The Super-Tree's share of the centre column's height, the request view's the rest. */
  superTreeShare: number;
}

export type ColumnId = 'side' | 'right' | 'far';

/** The defaults fit one 1366 × 768 screen with every main view visible. */
export const DEFAULT_LAYOUT: PanelLayout = { side: 260, right: 320, far: 320, superTreeShare: 0.6 };

/** Each column's least width: its controls and charts stay usable. */
export const MIN_COLUMN_WIDTH: Record<ColumnId, number> = { side: 200, right: 220, far: 220 };
export const MAX_COLUMN_WIDTH = 720;
export const SHARE_RANGE = { min: 0.2, max: 0.85 } as const;

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/** A layout with every size inside its range (and whole pixels). */
export function clampLayout(layout: PanelLayout): PanelLayout {
  const width = (id: ColumnId) => Math.round(clamp(layout[id], MIN_COLUMN_WIDTH[id], MAX_COLUMN_WIDTH));
  return { side: width('side'), right: width('right'), far: width('far'), superTreeShare: clamp(layout.superTreeShare, SHARE_RANGE.min, SHARE_RANGE.max) };
}

/** The shell grid's columns: each side column up to its width (less on a small screen), splitters between. */
export function gridColumns(layout: PanelLayout, splitter: number): string {
  const column = (id: ColumnId) => `minmax(${MIN_COLUMN_WIDTH[id]}px, ${layout[id]}px)`;
  return [column('side'), `${splitter}px`, 'minmax(0, 1fr)', `${splitter}px`, column('right'), `${splitter}px`, column('far')].join(' ');
}
