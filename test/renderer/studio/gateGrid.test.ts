import { describe, expect, it } from 'vitest';
import { buildGateGrid, truncationRates } from '../../../src/renderer/studio/gateGrid.js';
import { sampleRequest, sampleStep } from './fixtures.js';

describe('buildGateGrid', () => {
  const a = sampleRequest({ requestId: 'a' });
  const bTruncated = sampleRequest({ requestId: 'b', gates: [{ depth: 0, confidence: 0.2, tau: 0.3, pass: false }] });
  const steps = [
    sampleStep(0, [a, bTruncated]),
    sampleStep(1, [bTruncated]),
    sampleStep(2, [a, sampleRequest({ requestId: 'c', gates: [] })]),
  ];

  it('puts each gate check of each request at its step and depth', () => {
    const grid = buildGateGrid(steps, 10, true);
    // The newest step's batch first (a, c), then requests that retired during the window (b).
    expect(grid.requests).toEqual(['a', 'c', 'b']);
    expect(grid.steps).toEqual([0, 1, 2]);
    expect(grid.depths).toEqual([0, 2]);
    const [rowA, rowC, rowB] = grid.cells;
    expect(rowA.map((c) => c?.outcome ?? null)).toEqual(['pass', 'pass', null, null, 'pass', 'pass']);
    expect(rowB.map((c) => c?.outcome ?? null)).toEqual(['truncate', null, 'truncate', null, null, null]);
    expect(rowC.every((c) => c === null)).toBe(true);
    expect(rowB[0]).toEqual({ outcome: 'truncate', confidence: 0.2, tau: 0.3 });
  });

  it('tells a waived cut from a truncation, and counts only truncations as truncated', () => {
    const waived = sampleRequest({ requestId: 'w', gates: [{ depth: 0, confidence: 0.2, tau: 0.3, pass: false, waived: true }] });
    const grid = buildGateGrid([sampleStep(0, [waived, bTruncated])], 10);
    expect(grid.cells.map((row) => row[0]?.outcome)).toEqual(['waived', 'truncate']);
    expect(truncationRates(grid)).toEqual([{ depth: 0, checks: 2, truncated: 1, waived: 1 }]);
  });

  it('keeps only the most recent window of steps and, by default, only the batch in flight', () => {
    const grid = buildGateGrid(steps, 2);
    expect(grid.steps).toEqual([1, 2]);
    expect(grid.requests).toEqual(['a', 'c']);
    expect(grid.cells[0].map((c) => c?.outcome ?? null)).toEqual([null, null, 'pass', 'pass']);
  });

  it('counts truncations per gated depth', () => {
    expect(truncationRates(buildGateGrid(steps, 10, true))).toEqual([
      { depth: 0, checks: 4, truncated: 2, waived: 0 },
      { depth: 2, checks: 2, truncated: 0, waived: 0 },
    ]);
  });
});
