// A splitter between two regions of the shell: drag it with the pointer, or focus it and use the
// arrow keys (Shift for bigger steps, Home and End for the ends of its range). It reports the new
// size; the store keeps it, so the layout holds while the studio runs.
import { useRef, type KeyboardEvent, type PointerEvent } from 'react';

export interface SplitterProps {
  /** 'vertical': a bar between columns, dragged sideways; 'horizontal': between rows, dragged up and down. */
  orientation: 'vertical' | 'horizontal';
  label: string;
  value: number;
  min: number;
  max: number;
  /**
   * The size for a pointer moved by `delta` pixels from where the drag began (`start`: the size
   * then). Keys move by `keyStep` (× 4 with Shift) in the same direction as a pointer moving right
   * or down.
   */
  resize(start: number, delta: number): number;
  keyStep: number;
  onChange(value: number): void;
  /** How the value reads to a screen reader (its width in pixels, a share in percent). */
  valueText?: (value: number) => string;
  testId?: string;
}

export function Splitter({ orientation, label, value, min, max, resize, keyStep, onChange, valueText, testId }: SplitterProps) {
  const drag = useRef<{ pointer: number; origin: number; start: number } | null>(null);
  const coordinate = (e: PointerEvent) => (orientation === 'vertical' ? e.clientX : e.clientY);
  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    if (e.button !== 0) return;
    e.preventDefault();
    e.currentTarget.setPointerCapture?.(e.pointerId);
    drag.current = { pointer: e.pointerId, origin: coordinate(e), start: value };
  };
  const onPointerMove = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    if (!d || d.pointer !== e.pointerId) return;
    onChange(resize(d.start, coordinate(e) - d.origin));
  };
  const endDrag = (e: PointerEvent<HTMLDivElement>) => {
    if (drag.current?.pointer !== e.pointerId) return;
    drag.current = null;
    e.currentTarget.releasePointerCapture?.(e.pointerId);
  };
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const step = keyStep * (e.shiftKey ? 4 : 1);
    const forward = orientation === 'vertical' ? 'ArrowRight' : 'ArrowDown';
    const back = orientation === 'vertical' ? 'ArrowLeft' : 'ArrowUp';
    let next: number | null = null;
    if (e.key === forward) next = resize(value, step);
    else if (e.key === back) next = resize(value, -step);
    else if (e.key === 'Home') next = min;
    else if (e.key === 'End') next = max;
    if (next === null) return;
    e.preventDefault();
    onChange(next);
  };
  return (
    <div
      className={`splitter splitter-${orientation}`}
      role="separator"
      tabIndex={0}
      aria-label={label}
      aria-orientation={orientation}
      aria-valuenow={Math.round(value * 100) / 100}
      aria-valuemin={min}
      aria-valuemax={max}
      aria-valuetext={valueText?.(value)}
      data-testid={testId}
      onPointerDown={onPointerDown}
      onPointerMove={onPointerMove}
      onPointerUp={endDrag}
      onPointerCancel={endDrag}
      onKeyDown={onKeyDown}
    />
  );
}
