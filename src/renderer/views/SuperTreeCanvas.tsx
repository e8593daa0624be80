// The Super-Tree: every request's draft tree of the shown step, side by side on one canvas.
// It subscribes to the store outside React and redraws on the next animation frame, so a stream
// of frames never re-renders a React tree; a click selects the request under the pointer.
import { useEffect, useRef } from 'react';
import type { StepEvent } from '../../shared/events.js';
import { countStates, nodeStates } from '../studio/nodeStates.js';
import { viewedStep } from '../studio/store.js';
import { hitTestForest, packForest, type PackedForest } from '../studio/treeLayout.js';
import { drawSuperTree } from './drawSuperTree.js';
import { NodeLegend } from './Legend.js';
import { useStudioStore } from './StudioContext.js';
import { prepareCanvas, useCanvasSize, useFrameScheduler } from './useCanvas.js';

export function summariseStep(step: StepEvent): string {
  let nodes = 0;
  let accepted = 0;
  let verified = 0;
  for (const req of step.requests) {
    nodes += req.nodes.length;
    verified += req.nodes.filter((n) => n.verified).length;
    accepted += countStates(nodeStates(req)).accepted - 1;
  }
  return `step ${step.step} · ${step.requests.length} requests · ${nodes} drafted · ${verified} verified · ${accepted} accepted`;
}

export function SuperTreeCanvas() {
  const store = useStudioStore();
  const containerRef = useRef<HTMLDivElement>(null);
  const canvasRef = useRef<HTMLCanvasElement>(null);
  const summaryRef = useRef<HTMLSpanElement>(null);
  const size = useCanvasSize(containerRef);
  const layoutRef = useRef<{ step: StepEvent; width: number; height: number; forest: PackedForest } | null>(null);

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
    const state = store.getState();
    const step = viewedStep(state);
    const canvas = canvasRef.current;
    if (canvas) canvas.dataset.step = step ? String(step.step) : '';
    if (summaryRef.current) summaryRef.current.textContent = step ? summariseStep(step) : 'waiting for the first step';
    if (step === null) {
      prepareCanvas(canvas, size);
      return;
    }
    let cached = layoutRef.current;
    if (cached === null || cached.step !== step || cached.width !== size.width || cached.height !== size.height) {
      cached = { step, width: size.width, height: size.height, forest: packForest(step.requests, { width: size.width, height: size.height }) };
      layoutRef.current = cached;
    }
    const ctx = prepareCanvas(canvas, size);
    if (ctx === null) return;
    drawSuperTree(ctx, step, cached.forest, { width: size.width, height: size.height, selectedRequestId: state.selectedRequestId });
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
    return hitTestForest(forest, e.clientX - rect.left, e.clientY - rect.top)?.requestId ?? null;
  };

  return (
    <section className="view super-tree" aria-label="Super-Tree">
      <header className="view-header">
        <h2>Super-Tree</h2>
        <span className="summary" ref={summaryRef} data-testid="super-tree-summary" />
      </header>
      <NodeLegend />
      <div className="canvas-box" ref={containerRef}>
        <canvas
          ref={canvasRef}
          data-testid="super-tree-canvas"
          style={{ width: size.width, height: size.height }}
          onClick={(e) => {
            const id = requestAt(e);
            if (id !== null) store.getState().selectRequest(id);
          }}
          onMouseMove={(e) => {
            const id = requestAt(e);
            e.currentTarget.title = id === null ? '' : `request ${id} — click to open`;
            e.currentTarget.style.cursor = id === null ? 'default' : 'pointer';
          }}
        />
      </div>
    </section>
  );
}
