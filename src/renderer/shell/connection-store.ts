// The shell's own state: how the renderer is linked to the engine host. Everything the engine
// reports (status, frames, errors) lives in the studio store (studio/store.ts).
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { ConnectionInfo, ConnectionState, Transport } from '../transport/types.js';

export interface ConnectionSlice {
  transport: Transport['kind'] | null;
  state: ConnectionState;
  detail: string | null;
  /** Times the link came up; >1 means it dropped and recovered. */
  connects: number;
  setConnection(info: ConnectionInfo): void;
}

export type ConnectionStore = StoreApi<ConnectionSlice>;

export function createConnectionStore(transport: Transport['kind'] | null): ConnectionStore {
  return createStore<ConnectionSlice>()((set, get) => ({
    transport,
    state: 'connecting',
    detail: null,
    connects: 0,
    setConnection(info) {
      const connects = info.state === 'connected' && get().state !== 'connected' ? get().connects + 1 : get().connects;
      set({ state: info.state, detail: info.detail ?? null, connects });
    },
  }));
}
