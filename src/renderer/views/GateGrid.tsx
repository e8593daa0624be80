// Gate decisions over recent steps: one row per request, one column group per step, a cell per
// gated depth, green pass / red truncate / amber failed with the cut waived. Canvas, redrawn from a
// store subscription.
import { useEffect, useRef } from 'react';
import { GATE_OUTCOMES } from '../../shared/events.js';
import { buildGateGrid, truncationRates, type GateGrid as Grid } from '../studio/gateGrid.js';
import { GATE_COLOURS, GRID_LINE_COLOUR, LABEL_COLOUR, SELECTION_COLOUR } from './colors.js';
import { useStudioStore } from './StudioContext.js';
import { prepareCanvas, useCanvasSize, useFrameScheduler } from './useCanvas.js';

export const GATE_WINDOW = 24;
/** The grid changes a column per step; ten redraws a second are plenty to read it. */
const REDRAW_MS = 100;
const LABEL_WIDTH = 34;
const HEADER_HEIGHT = 14;

interface GridGeometry {
  rowHeight: number;
  cellWidth: number;
}

function geometry(grid: Grid, width: number, height: number): GridGeometry {
  const columns = Math.max(1, grid.steps.length * grid.depths.length);
  return {
    rowHeight: Math.max(1, Math.min(14, (height - HEADER_HEIGHT) / Math.max(1, grid.requests.length))),
    cellWidth: Math.max(1, (width - LABEL_WIDTH) / columns),
  };
}

function drawGrid(ctx: CanvasRenderingContext2D, grid: Grid, width: number, height: number, selected: string | null): void {
  const { rowHeight, cellWidth } = geometry(grid, width, height);
  const groupWidth = cellWidth * grid.depths.length;
  ctx.font = '9px system-ui, sans-serif';
  ctx.textBaseline = 'top';
  ctx.fillStyle = LABEL_COLOUR;
  const labelEvery = Math.ceil(28 / Math.max(1, groupWidth));
  grid.steps.forEach((step, s) => {
    if (s % labelEvery === 0) ctx.fillText(String(step), LABEL_WIDTH + s * groupWidth + 1, 1);
  });
  const gap = cellWidth > 4 ? 1 : 0;
  for (const outcome of GATE_OUTCOMES) {
    ctx.fillStyle = GATE_COLOURS[outcome];
    ctx.beginPath();
    grid.cells.forEach((row, r) => {
      row.forEach((cell, c) => {
        if (cell?.outcome === outcome) ctx.rect(LABEL_WIDTH + c * cellWidth, HEADER_HEIGHT + r * rowHeight, cellWidth - gap, Math.max(1, rowHeight - gap));
      });
    });
    ctx.fill();
  }
  // Step separators so depth columns read as groups.
  ctx.strokeStyle = GRID_LINE_COLOUR;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let s = 1; s < grid.steps.length; s += 1) {
    const x = Math.round(LABEL_WIDTH + s * groupWidth) + 0.5;
    ctx.moveTo(x, HEADER_HEIGHT);
    ctx.lineTo(x, HEADER_HEIGHT + grid.requests.length * rowHeight);
  }
  ctx.stroke();
  if (rowHeight >= 8) {
    ctx.fillStyle = LABEL_COLOUR;
    grid.requests.forEach((id, r) => ctx.fillText(id, 2, HEADER_HEIGHT + r * rowHeight, LABEL_WIDTH - 4));
  }
  const selectedRow = selected === null ? -1 : grid.requests.indexOf(selected);
  if (selectedRow >= 0) {
    ctx.strokeStyle = SELECTION_COLOUR;
    ctx.lineWidth = 1.5;
    ctx.strokeRect(1, HEADER_HEIGHT + selectedRow * rowHeight, width - 2, Math.max(2, rowHeight));
  }
}

export function GateGrid() {
  const store = useStudioStore();
  const containerRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const captionRef = useRef<HTMLSpanElement>(null);
  const gridRef = useRef<Grid | null>(null);
  const size = useCanvasSize(containerRef);

  const draw = useFrameScheduler(() => {
    const state = store.getState();
    const grid = buildGateGrid(state.gateSteps, GATE_WINDOW);
    gridRef.current = grid;
    if (captionRef.current) {
      captionRef.current.textContent =
        grid.depths.length === 0
          ? 'no gate checked yet'
          : truncationRates(grid)
              .map((r) => `depth ${r.depth}: ${r.truncated}/${r.checks} truncated${r.waived > 0 ? `, ${r.waived} waived` : ''}`)
              .join(' · ');
    }
    const ctx = prepareCanvas(canvasRef.current, size);
    if (ctx !== null) drawGrid(ctx, grid, size.width, size.height, state.selectedRequestId);
  }, REDRAW_MS);

  useEffect(() => {
    draw();
    return store.subscribe((state, prev) => {
      if (state.gateSteps !== prev.gateSteps || state.selectedRequestId !== prev.selectedRequestId) draw();
    });
  }, [store, draw, size]);

  return (
    <section className="view gate-grid" aria-label="Gate decisions">
      <header className="view-header">
        <h2>Gate decisions</h2>
        <span className="summary" ref={captionRef} data-testid="gate-summary" />
      </header>
      <div className="canvas-box" ref={containerRef}>
        <canvas
          ref={canvasRef}
          data-testid="gate-grid-canvas"
          style={{ width: size.width, height: size.height }}
          onClick={(e) => {
            const grid = gridRef.current;
            if (!grid) return;
            const rect = e.currentTarget.getBoundingClientRect();
            const { rowHeight } = geometry(grid, size.width, size.height);
            const row = Math.floor((e.clientY - rect.top - HEADER_HEIGHT) / rowHeight);
            const id = grid.requests[row];
            if (id !== undefined) store.getState().selectRequest(id);
          }}
        />
      </div>
    </section>
  );
}
