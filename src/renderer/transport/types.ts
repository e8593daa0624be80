// The renderer's one way to the engine host. Two implementations: the Electron preload bridge
// (desktop app) and a WebSocket to the web host (any browser). Views never see which.
import type { EngineEvent, EngineRequest } from '../../shared/messages.js';

export type ConnectionState = 'connecting' | 'connected' | 'disconnected';

export interface ConnectionInfo {
  state: ConnectionState;
  /** Why the link is down or retrying, in words a user can act on. */
  detail?: string;
}

export interface Transport {
  readonly kind: 'electron' | 'websocket';
  /** Starts connecting; events and state changes arrive through the listeners. */
  connect(): void;
  /** Sends one request; throws with a readable message when it is invalid or the link is down. */
  send(request: EngineRequest): void;
  onEvent(listener: (event: EngineEvent) => void): () => void;
  onConnection(listener: (info: ConnectionInfo) => void): () => void;
  close(): void;
}

/** A tiny listener list shared by both transports. */
export class Listeners<T> {
  private readonly listeners = new Set<(value: T) => void>();
  add(listener: (value: T) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  emit(value: T): void {
    for (const listener of this.listeners) listener(value);
  }
}
