import { describe, expect, it } from 'vitest';
import { layerConfidence } from '../../../src/engine/draft/confidence';
import { DraftTree, stepScore } from '../../../src/engine/tree';

const log = Math.log;

describe('confidence signals', () => {
  it('path-prob reads log q; path-margin renormalises q over the two best candidates', () => {
    const logq = [log(0.3), log(0.1), log(0.05)];
    expect(stepScore(logq, 0, 'path-prob')).toBeCloseTo(log(0.3), 12);
    expect(stepScore(logq, 0, 'path-margin')).toBeCloseTo(log(0.75), 12);
    expect(stepScore(logq, 1, 'path-margin')).toBeCloseTo(log(0.25), 12);
    expect(stepScore(logq, 2, 'path-margin')).toBeCloseTo(log(0.125), 12);
    // No runner-up to compare with: uncontested.
    expect(stepScore([log(0.3)], 0, 'path-margin')).toBe(0);
    // Rounding never lets a score rise along a path.
    expect(stepScore([1e-9, -30], 0, 'path-prob')).toBe(0);
  });

  it('the tree keeps both path scores, and c_{i,d} is the best path of the layer in either signal', () => {
    const tree = new DraftTree('r', 7);
    // The draft prefers 10 over 11 clearly (0.2 vs 0.01) but with little mass; 20 vs 21 barely.
    tree.setCandidates(0, 0, Int32Array.from([10, 11]), Float32Array.from([log(0.2), log(0.01)]));
    const a = tree.addChild(0, 0);
    const b = tree.addChild(0, 1);
    tree.setCandidates(a, 1, Int32Array.from([20, 21]), Float32Array.from([log(0.5), log(0.45)]));
    const aa = tree.addChild(a, 0);
    expect(tree.pathScore[aa]).toBeCloseTo(log(0.2) + log(0.5), 6);
    expect(tree.marginScore[aa]).toBeCloseTo(log(0.2 / 0.21) + log(0.5 / 0.95), 6);
    expect(tree.marginScore[b]).toBeCloseTo(log(0.01 / 0.21), 6);
    expect(layerConfidence(tree, 0, 'path-prob')).toBeCloseTo(0.2, 6);
    expect(layerConfidence(tree, 0, 'path-margin')).toBeCloseTo(0.2 / 0.21, 6);
    expect(layerConfidence(tree, 1)).toBeCloseTo(0.1, 6);
    expect(layerConfidence(tree, 2)).toBe(0);
  });
});
