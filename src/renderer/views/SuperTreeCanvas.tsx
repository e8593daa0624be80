// The Super-Tree: every request's draft tree of the shown step, side by side on one canvas.
// It subscribes to the store outside React and redraws on the next animation frame, so a stream
// of frames never re-renders a React tree; a click selects the request under the pointer.
import { useEffect, useRef, useState } from 'react';
import type { StepEvent } from '../../shared/events.js';
import { countStates, nodeStates } from '../studio/nodeStates.js';
import { viewedStep, type StudioState } from '../studio/store.js';
import { hitTestForest, packForest, type PackedForest } from '../studio/treeLayout.js';
import { drawSuperTree } from './drawSuperTree.js';
import { IDENTITY, panBy, toForest, zoomAt, type ViewTransform } from '../studio/viewTransform.js';
import { plural } from '../studio/tokens.js';
import { NodeLegend } from './Legend.js';
import { useStudioStore } from './StudioContext.js';
import { prepareCanvas, useCanvasSize, useFrameScheduler, type CanvasSize } from './useCanvas.js';

export function summariseStep(step: StepEvent): string {
  let nodes = 0;
  let accepted = 0;
  let verified = 0;
  for (const req of step.requests) {
    nodes += req.nodes.length;
    verified += req.nodes.filter((n) => n.verified).length;
    accepted += countStates(nodeStates(req)).accepted - 1;
  }
  return `step ${step.step} · ${plural(step.requests.length, 'request')} · ${nodes} drafted · ${verified} verified · ${accepted} accepted`;
}

type ForestLayout = { step: StepEvent; width: number; height: number; forest: PackedForest };

/**
 * Draws the step the views show (or clears the canvas before the first) and writes its summary;
 * returns the forest's layout, reused while the step and the canvas size stay.
 */
function drawViewedStep(
  state: StudioState,
  canvas: HTMLCanvasElement | null,
  summary: HTMLSpanElement | null,
  size: CanvasSize,
  cached: ForestLayout | null,
  view: ViewTransform,
): ForestLayout | null {
  const step = viewedStep(state);
  if (canvas) canvas.dataset.step = step ? String(step.step) : '';
  if (summary) summary.textContent = step ? summariseStep(step) : 'waiting for the first step';
  if (step === null) {
    prepareCanvas(canvas, size);
    return cached;
  }
  if (cached === null || cached.step !== step || cached.width !== size.width || cached.height !== size.height) {
    cached = { step, width: size.width, height: size.height, forest: packForest(step.requests, { width: size.width, height: size.height }) };
  }
  const ctx = prepareCanvas(canvas, size);
  if (ctx !== null) drawSuperTree(ctx, step, cached.forest, { width: size.width, height: size.height, selectedRequestId: state.selectedRequestId, view });
  return cached;
}

/** Zoom in, zoom out and back to every tree. */
function ZoomControls({ zoomed, zoomBy, fit }: { zoomed: boolean; zoomBy: (factor: number) => void; fit: () => void }) {
  return (
    <span className="zoom-controls">
      <button type="button" aria-label="zoom in" onClick={() => zoomBy(1.5)}>
        +
      </button>
      <button type="button" aria-label="zoom out" onClick={() => zoomBy(1 / 1.5)}>
        −
      </button>
      <button type="button" disabled={!zoomed} onClick={fit} title="every tree again (or double-click the canvas)">
        fit
      </button>
    </span>
  );
}

/** The wheel zooms about the pointer; a native listener, since React's wheel listener is passive. */
function useWheelZoom(canvasRef: React.RefObject<HTMLCanvasElement | null>, viewRef: React.RefObject<ViewTransform>, setView: (view: ViewTransform) => void): void {
  useEffect(() => {
    const canvas = canvasRef.current;
    if (!canvas) return;
    const onWheel = (e: WheelEvent): void => {
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      setView(zoomAt(viewRef.current, e.clientX - rect.left, e.clientY - rect.top, Math.exp(-e.deltaY * 0.0015)));
    };
    canvas.addEventListener('wheel', onWheel, { passive: false });
    return () => canvas.removeEventListener('wheel', onWheel);
  });
}

export function SuperTreeCanvas() {
  const store = useStudioStore();
  const containerRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const summaryRef = useRef<HTMLSpanElement>(null);
  const size = useCanvasSize(containerRef);
  const layoutRef = useRef<ForestLayout | null>(null);
  // Zoom and pan: the forest is laid out to fit the canvas, then drawn under this transform, so at
  // batch 64 a reader zooms into a few trees and their labels appear once they can be read.
  const viewRef = useRef<ViewTransform>(IDENTITY);
  const [zoomed, setZoomed] = useState(false);
  const dragRef = useRef<{ x: number; y: number; moved: boolean } | null>(null);

  // The last draw's cost; the next draw waits at least twice that, so on a slow machine the canvas
  // takes at most about a third of the main thread and the page stays responsive.
  const drawMs = useRef(0);
  const draw = useFrameScheduler(
    () => {
      const started = performance.now();
      drawFrame();
      drawMs.current = performance.now() - started;
    },
    () => Math.min(250, 2 * drawMs.current),
  );
  const drawFrame = (): void => {
    layoutRef.current = drawViewedStep(store.getState(), canvasRef.current, summaryRef.current, size, layoutRef.current, viewRef.current);
  };

  const setView = (view: ViewTransform): void => {
    viewRef.current = view;
    setZoomed(view.scale !== 1);
    if (canvasRef.current) canvasRef.current.dataset.zoom = view.scale.toFixed(2);
    draw();
  };

  useEffect(() => {
    draw();
    return store.subscribe((state, prev) => {
      if (
        state.latestStep !== prev.latestStep ||
        state.pinnedStep !== prev.pinnedStep ||
        state.selectedRequestId !== prev.selectedRequestId
      ) {
        draw();
      }
    });
  }, [store, draw, size]);

  const requestAt = (e: React.MouseEvent<HTMLCanvasElement>): string | null => {
    const forest = layoutRef.current?.forest;
    if (!forest) return null;
    const rect = e.currentTarget.getBoundingClientRect();
    const { x, y } = toForest(viewRef.current, e.clientX - rect.left, e.clientY - rect.top);
    return hitTestForest(forest, x, y)?.requestId ?? null;
  };

  useWheelZoom(canvasRef, viewRef, setView);

  return (
    <section className="view super-tree" aria-label="Super-Tree">
      <header className="view-header">
        <h2>Super-Tree</h2>
        <span className="summary" ref={summaryRef} data-testid="super-tree-summary" />
        <ZoomControls
          zoomed={zoomed}
          zoomBy={(factor) => setView(zoomAt(viewRef.current, size.width / 2, size.height / 2, factor))}
          fit={() => setView(IDENTITY)}
        />
      </header>
      <NodeLegend />
      <div className="canvas-box" ref={containerRef}>
        <canvas
          ref={canvasRef}
          data-testid="super-tree-canvas"
          style={{ width: size.width, height: size.height }}
          title="click a tree to open its request; wheel or + to zoom, drag to pan"
          onClick={(e) => {
            if (dragRef.current?.moved) return; // the end of a pan, not a click
            const id = requestAt(e);
            if (id !== null) store.getState().selectRequest(id);
          }}
          onDoubleClick={() => setView(IDENTITY)}
          onPointerDown={(e) => {
            dragRef.current = { x: e.clientX, y: e.clientY, moved: false };
          }}
          onPointerUp={() => {
            // Let the click that follows see whether this was a pan.
            setTimeout(() => (dragRef.current = null), 0);
          }}
          onMouseMove={(e) => {
            const drag = dragRef.current;
            if (drag && e.buttons === 1 && viewRef.current.scale > 1) {
              const dx = e.clientX - drag.x;
              const dy = e.clientY - drag.y;
              if (drag.moved || Math.abs(dx) + Math.abs(dy) > 3) {
                drag.moved = true;
                drag.x = e.clientX;
                drag.y = e.clientY;
                setView(panBy(viewRef.current, dx, dy, size.width, size.height));
              }
              return;
            }
            const id = requestAt(e);
            e.currentTarget.title = id === null ? '' : `request ${id} — click to open`;
            e.currentTarget.style.cursor = id === null ? 'default' : 'pointer';
          }}
        />
      </div>
    </section>
  );
}
