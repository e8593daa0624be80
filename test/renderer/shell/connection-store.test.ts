import { describe, expect, it } from 'vitest';
import { createConnectionStore } from '../../../src/renderer/shell/connection-store.js';

describe('connection store', () => {
  it('starts connecting and counts each time the link comes up', () => {
    const store = createConnectionStore('websocket');
    expect(store.getState()).toMatchObject({ transport: 'websocket', state: 'connecting', connects: 0, detail: null });
    store.getState().setConnection({ state: 'connected' });
    store.getState().setConnection({ state: 'connected' });
    expect(store.getState().connects).toBe(1);
    store.getState().setConnection({ state: 'disconnected', detail: 'lost it' });
    expect(store.getState()).toMatchObject({ state: 'disconnected', detail: 'lost it' });
    store.getState().setConnection({ state: 'connected' });
    expect(store.getState()).toMatchObject({ state: 'connected', detail: null, connects: 2 });
  });
});
