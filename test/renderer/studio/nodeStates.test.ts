import { describe, expect, it } from 'vitest';
import { countStates, grantMark, nodeStates } from '../../../src/renderer/studio/nodeStates.js';
import { node, sampleRequest } from './fixtures.js';

describe('nodeStates', () => {
  it('derives accepted, rejected, unreached and pruned from the tree and the accepted path', () => {
    expect(nodeStates(sampleRequest())).toEqual([
      'accepted', // root
      'accepted', // 1 on the path
      'rejected', // 2: root accepted, 2 not
      'accepted', // 3 on the path
      'rejected', // 4: parent 1 accepted
      'rejected', // 5: parent 3 accepted, the target refused it
      'unreached', // 6: parent 2 was rejected
      'pruned', // 7: never verified
    ]);
  });

  it('treats an unverified node as pruned even when its parent was accepted', () => {
    const req = sampleRequest({ nodes: [node(0, -1, -1), node(1, 0, 0, { verified: false })], accepted: [] });
    expect(nodeStates(req)).toEqual(['accepted', 'pruned']);
  });

  it('leaves every verified child of the root rejected when nothing was accepted', () => {
    const req = sampleRequest({ accepted: [] });
    const states = nodeStates(req);
    expect(states.slice(1, 3)).toEqual(['rejected', 'rejected']);
    expect(states[3]).toBe('unreached');
    expect(countStates(states)).toEqual({ accepted: 1, rejected: 2, unreached: 4, pruned: 1 });
  });

  it('marks depth and width grants only on verified nodes', () => {
    expect(grantMark('depth', true)).toBe('depth');
    expect(grantMark('width', true)).toBe('width');
    expect(grantMark('width', false)).toBeNull();
    expect(grantMark('base', true)).toBeNull();
  });
});
