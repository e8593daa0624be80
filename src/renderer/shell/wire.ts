// Connects a transport to the stores: engine events into the studio store, link state into the
// connection store. Returns the function that undoes it.
import type { StudioStore } from '../studio/store.js';
import type { Transport } from '../transport/types.js';
import type { ConnectionStore } from './connection-store.js';

export function wireTransport(transport: Transport, studio: StudioStore, connection: ConnectionStore): () => void {
  const offEvent = transport.onEvent((event) => studio.getState().ingest(event));
  const offConnection = transport.onConnection((info) => connection.getState().setConnection(info));
  transport.connect();
  return () => {
    offEvent();
    offConnection();
    transport.close();
  };
}
