// Zoom and pan of a canvas view: screen = forest · scale + offset. Zoom stays between 1 (the whole
// forest fits) and MAX_ZOOM, and the forest never leaves the canvas.
export interface ViewTransform {
  scale: number;
  x: number;
  y: number;
}

export const IDENTITY: ViewTransform = { scale: 1, x: 0, y: 0 };
export const MAX_ZOOM = 16;

export function toForest(view: ViewTransform, screenX: number, screenY: number): { x: number; y: number } {
  return { x: (screenX - view.x) / view.scale, y: (screenY - view.y) / view.scale };
}

/** Zooms by `factor` about a screen point, which stays over the same spot of the forest. */
export function zoomAt(view: ViewTransform, screenX: number, screenY: number, factor: number): ViewTransform {
  const scale = Math.min(MAX_ZOOM, Math.max(1, view.scale * factor));
  if (scale === 1) return IDENTITY;
  const at = toForest(view, screenX, screenY);
  return { scale, x: screenX - at.x * scale, y: screenY - at.y * scale };
}

/** Moves the view by a screen distance, keeping the forest over the canvas (width × height). */
export function panBy(view: ViewTransform, dx: number, dy: number, width: number, height: number): ViewTransform {
  const clamp = (offset: number, size: number) => Math.min(0, Math.max(size - size * view.scale, offset));
  return { scale: view.scale, x: clamp(view.x + dx, width), y: clamp(view.y + dy, height) };
}
