import { describe, expect, it } from 'vitest';
import { hitTestForest, layoutTree, nodePosition, packForest } from '../../../src/renderer/studio/treeLayout.js';
import { node, sampleRequest } from './fixtures.js';
import { SyntheticRun } from './syntheticSteps.js';

describe('layoutTree', () => {
  it('gives leaves their own slots and centres parents over their children', () => {
    const layout = layoutTree(sampleRequest());
    // Leaves: 5, 4, 6, 7 → 4 slots; depth -1..2 → 4 rows.
    expect(layout.width).toBe(4);
    expect(layout.rows).toBe(4);
    expect(Array.from(layout.row)).toEqual([0, 1, 1, 2, 2, 3, 2, 2]);
    const x = Array.from(layout.x);
    expect(x[5]).toBe(0.5); // best path leftmost
    expect(x[3]).toBe(0.5);
    expect(x[4]).toBe(1.5);
    expect(x[1]).toBe(1); // over 3 and 4
    expect(x[2]).toBe(3); // over 6 (2.5) and 7 (3.5)
    expect(x[0]).toBe(2);
    const leafSlots = [x[5], x[4], x[6], x[7]];
    expect(new Set(leafSlots).size).toBe(4);
  });

  it('orders children best path score first (ties by position) and gives each leaf its own slot, tree after tree', () => {
    // Many trees in a row (the layout reuses scratch space between them), ties and -Infinity included.
    const run = new SyntheticRun({ batch: 64, kmax: 512 });
    const requests = [...run.next().requests, ...run.next().requests];
    const tied = sampleRequest({ requestId: 'tied' });
    tied.nodes = tied.nodes.map((n) => (n.parent === 0 ? { ...n, pathScore: -0.5 } : n.parent === 2 ? { ...n, pathScore: -Infinity } : n));
    for (const request of [...requests, tied]) {
      const layout = layoutTree(request);
      const kids = new Map<number, number[]>();
      request.nodes.forEach((n, i) => {
        if (n.parent >= 0) kids.set(n.parent, [...(kids.get(n.parent) ?? []), i]);
      });
      const leaves: number[] = [];
      request.nodes.forEach((n, i) => {
        const c = kids.get(i) ?? [];
        if (c.length === 0) {
          leaves.push(layout.x[i]);
          return;
        }
        // Left to right = best first; equal scores keep list order.
        const byX = [...c].sort((a, b) => layout.x[a] - layout.x[b]);
        const score = (k: number): number => (Number.isFinite(request.nodes[k].pathScore) ? request.nodes[k].pathScore : -1e30);
        const expected = [...c].sort((a, b) => score(b) - score(a) || a - b);
        expect(byX).toEqual(expected);
        expect(layout.x[i]).toBeCloseTo((layout.x[byX[0]] + layout.x[byX[byX.length - 1]]) / 2, 5);
        for (const k of c) expect(layout.row[k]).toBe(layout.row[i] + 1);
      });
      expect([...leaves].sort((a, b) => a - b)).toEqual(leaves.map((_, k) => k + 0.5));
      expect(layout.width).toBe(leaves.length);
    }
  });

  it('lays out a 200-deep chain without recursion limits', () => {
    const nodes = [node(0, -1, -1)];
    for (let i = 1; i <= 200; i += 1) nodes.push(node(i, i - 1, i - 1));
    const layout = layoutTree(sampleRequest({ nodes, accepted: [] }));
    expect(layout.rows).toBe(201);
    expect(layout.width).toBe(1);
  });
});

describe('packForest', () => {
  const run = new SyntheticRun({ batch: 64, kmax: 512 });
  const step = run.next();

  it('packs every request without overlap inside the viewport width', () => {
    const forest = packForest(step.requests, { width: 1200, height: 600 });
    expect(forest.trees).toHaveLength(64);
    expect(forest.fits).toBe(true);
    expect(forest.height).toBeLessThanOrEqual(600);
    for (const t of forest.trees) expect(t.left + t.width).toBeLessThanOrEqual(1200 + 1e-9);
    for (let i = 0; i < forest.trees.length; i += 1) {
      for (let j = i + 1; j < forest.trees.length; j += 1) {
        const a = forest.trees[i];
        const b = forest.trees[j];
        const overlap = a.left < b.left + b.width && b.left < a.left + a.width && a.top < b.top + b.height && b.top < a.top + a.height;
        expect(overlap).toBe(false);
      }
    }
  });

  it('shrinks the scale when the viewport is smaller', () => {
    const big = packForest(step.requests, { width: 1600, height: 900 });
    const small = packForest(step.requests, { width: 500, height: 300 });
    expect(small.slot).toBeLessThan(big.slot);
  });

  it('gives spare height to the rows, never past the viewport', () => {
    const forest = packForest(step.requests.slice(0, 4), { width: 1200, height: 800 });
    expect(forest.rowHeight).toBeGreaterThan(Math.round(forest.slot * 1.1));
    expect(forest.height).toBeLessThanOrEqual(800);
  });

  it('finds the request under a node position and nothing outside the boxes', () => {
    const forest = packForest(step.requests, { width: 1200, height: 600 });
    const tree = forest.trees[17];
    const p = nodePosition(forest, tree, 0);
    expect(hitTestForest(forest, p.x, p.y)?.requestId).toBe(step.requests[17].requestId);
    expect(hitTestForest(forest, 1199, forest.height + 10)).toBeNull();
  });
});
