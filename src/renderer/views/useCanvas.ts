// A canvas that tracks its container's size and device pixel ratio, and a redraw scheduled on the
// next animation frame (several store updates in one frame draw once).
import { useEffect, useRef, useState } from 'react';

export interface CanvasSize {
  width: number;
  height: number;
  dpr: number;
}

export function useCanvasSize(container: React.RefObject<HTMLElement | null>): CanvasSize {
  const [size, setSize] = useState<CanvasSize>({ width: 0, height: 0, dpr: 1 });
  useEffect(() => {
    const el = container.current;
    if (el === null) return;
    const measure = (): void => {
      const rect = el.getBoundingClientRect();
      const dpr = typeof window !== 'undefined' ? window.devicePixelRatio || 1 : 1;
      setSize((prev) =>
        prev.width === Math.floor(rect.width) && prev.height === Math.floor(rect.height) && prev.dpr === dpr
          ? prev
          : { width: Math.floor(rect.width), height: Math.floor(rect.height), dpr },
      );
    };
    measure();
    if (typeof ResizeObserver === 'undefined') return;
    const observer = new ResizeObserver(measure);
    observer.observe(el);
    return () => observer.disconnect();
  }, [container]);
  return size;
}

/**
 * Returns a function that asks for `draw` to run once on the next animation frame, and not sooner
 * than `minIntervalMs` after the previous draw (a trailing draw always follows the last request).
 */
export function useFrameScheduler(draw: () => void, minIntervalMs: number | (() => number) = 0): () => void {
  const drawRef = useRef(draw);
  drawRef.current = draw;
  const intervalRef = useRef(minIntervalMs);
  intervalRef.current = minIntervalMs;
  const pending = useRef<number | null>(null);
  const delayed = useRef<ReturnType<typeof setTimeout> | null>(null);
  const lastDraw = useRef(0);
  useEffect(
    () => () => {
      if (pending.current !== null) cancelAnimationFrame(pending.current);
      if (delayed.current !== null) clearTimeout(delayed.current);
    },
    [],
  );
  return useRef(() => {
    if (pending.current !== null || delayed.current !== null) return;
    const frame = (): void => {
      pending.current = requestAnimationFrame(() => {
        pending.current = null;
        lastDraw.current = performance.now();
        drawRef.current();
      });
    };
    const setting = intervalRef.current;
    const interval = typeof setting === 'function' ? setting() : setting;
    const wait = lastDraw.current + interval - performance.now();
    if (wait <= 0) frame();
    else
      delayed.current = setTimeout(() => {
        delayed.current = null;
        frame();
      }, wait);
  }).current;
}

/** The panels' background (--bg-panel in styles.css): canvases are opaque and paint it themselves. */
export const CANVAS_BACKGROUND = '#161c29';

/** Sizes the backing store for the device pixel ratio and returns a context in CSS pixels, cleared. */
export function prepareCanvas(canvas: HTMLCanvasElement | null, size: CanvasSize): CanvasRenderingContext2D | null {
  if (canvas === null || size.width === 0 || size.height === 0) return null;
  const w = Math.round(size.width * size.dpr);
  const h = Math.round(size.height * size.dpr);
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  // Opaque: the compositor need not blend the canvas with what is under it.
  const ctx = canvas.getContext('2d', { alpha: false });
  if (ctx === null) return null;
  ctx.setTransform(size.dpr, 0, 0, size.dpr, 0, 0);
  ctx.fillStyle = CANVAS_BACKGROUND;
  ctx.fillRect(0, 0, size.width, size.height);
  return ctx;
}
