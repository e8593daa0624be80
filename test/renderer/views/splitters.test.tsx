// @vitest-environment happy-dom
// Resizable regions: the splitters between the columns and between the Super-Tree and the request
// view follow a drag and the keyboard, keep each size inside its range, and the store holds them.
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../../src/renderer/App.js';
import { createConnectionStore } from '../../../src/renderer/shell/connection-store.js';
import { DEFAULT_LAYOUT, MAX_COLUMN_WIDTH, MIN_COLUMN_WIDTH, SHARE_RANGE } from '../../../src/renderer/studio/layout.js';
import { createStudioStore } from '../../../src/renderer/studio/store.js';
import type { Transport } from '../../../src/renderer/transport/types.js';

afterEach(cleanup);

const transport: Transport = {
  kind: 'electron',
  connect() {},
  send() {},
  onEvent: () => () => {},
  onConnection: () => () => {},
  close() {},
};

function renderShell() {
  const studio = createStudioStore();
  render(<App studio={studio} connection={createConnectionStore('electron')} transport={transport} />);
  const grid = () => (document.querySelector('.shell-grid') as HTMLElement).style;
  return { studio, grid };
}

describe('splitters', () => {
  it('widen a column by a drag: the store keeps the width and the grid uses it', () => {
    const { studio, grid } = renderShell();
    expect(grid().gridTemplateColumns).toContain(`minmax(${MIN_COLUMN_WIDTH.right}px, ${DEFAULT_LAYOUT.right}px)`);
    const splitter = screen.getByTestId('splitter-right');
    // The boundary between the Super-Tree and the histograms dragged 80 px left: histograms 80 px wider.
    fireEvent.pointerDown(splitter, { pointerId: 1, button: 0, clientX: 900, clientY: 300 });
    fireEvent.pointerMove(splitter, { pointerId: 1, clientX: 860, clientY: 300 });
    fireEvent.pointerMove(splitter, { pointerId: 1, clientX: 820, clientY: 310 });
    fireEvent.pointerUp(splitter, { pointerId: 1, clientX: 820, clientY: 310 });
    expect(studio.getState().layout.right).toBe(DEFAULT_LAYOUT.right + 80);
    expect(grid().gridTemplateColumns).toContain(`minmax(${MIN_COLUMN_WIDTH.right}px, ${DEFAULT_LAYOUT.right + 80}px)`);
    expect(splitter.getAttribute('aria-valuenow')).toBe(String(DEFAULT_LAYOUT.right + 80));
    // A later move without a drag does nothing.
    fireEvent.pointerMove(splitter, { pointerId: 1, clientX: 100, clientY: 300 });
    expect(studio.getState().layout.right).toBe(DEFAULT_LAYOUT.right + 80);
    // The run column grows rightwards, and never past its range.
    const side = screen.getByTestId('splitter-side');
    fireEvent.pointerDown(side, { pointerId: 2, button: 0, clientX: 270, clientY: 300 });
    fireEvent.pointerMove(side, { pointerId: 2, clientX: 2000, clientY: 300 });
    fireEvent.pointerUp(side, { pointerId: 2, clientX: 2000, clientY: 300 });
    expect(studio.getState().layout.side).toBe(MAX_COLUMN_WIDTH);
  });

  it('move with the keyboard: arrows step, Shift steps further, Home and End go to the ends', () => {
    const { studio } = renderShell();
    const far = screen.getByRole('separator', { name: 'resize the gates, budget and metrics column' });
    far.focus();
    fireEvent.keyDown(far, { key: 'ArrowLeft' });
    expect(studio.getState().layout.far).toBe(DEFAULT_LAYOUT.far + 16);
    fireEvent.keyDown(far, { key: 'ArrowRight', shiftKey: true });
    expect(studio.getState().layout.far).toBe(DEFAULT_LAYOUT.far + 16 - 64);
    fireEvent.keyDown(far, { key: 'Home' });
    expect(studio.getState().layout.far).toBe(MIN_COLUMN_WIDTH.far);
    fireEvent.keyDown(far, { key: 'End' });
    expect(studio.getState().layout.far).toBe(MAX_COLUMN_WIDTH);
  });

  it("share the centre column between the Super-Tree and the request view by the column's height", () => {
    const { studio, grid } = renderShell();
    const centre = document.querySelector('.column-center') as HTMLElement;
    Object.defineProperty(centre, 'clientHeight', { value: 500 });
    const splitter = screen.getByRole('separator', { name: 'resize the Super-Tree against the request view' });
    // 100 px down a 500 px column: the Super-Tree's share grows by 0.2.
    fireEvent.pointerDown(splitter, { pointerId: 3, button: 0, clientX: 600, clientY: 400 });
    fireEvent.pointerMove(splitter, { pointerId: 3, clientX: 600, clientY: 500 });
    fireEvent.pointerUp(splitter, { pointerId: 3, clientX: 600, clientY: 500 });
    expect(studio.getState().layout.superTreeShare).toBeCloseTo(DEFAULT_LAYOUT.superTreeShare + 0.2, 9);
    expect(grid().getPropertyValue('--super-tree-share')).toBe(String(studio.getState().layout.superTreeShare));
    act(() => studio.getState().setLayout({ superTreeShare: 5 }));
    expect(studio.getState().layout.superTreeShare).toBe(SHARE_RANGE.max);
  });
});
