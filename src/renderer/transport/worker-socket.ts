// The page's side of the socket worker: looks like a WebSocket to WebSocketTransport, but its
// messages arrive as validated events ({ decoded: event }) rather than text.
import type { EngineEvent } from '../../shared/messages.js';
import { ackAtNextFrame } from './frame-pacer.js';
import { frameFromText } from './frame-text.js';
import type { FromSocketWorker, ToSocketWorker } from './socket-worker-protocol.js';
import type { SocketLike } from './websocket.js';

/** What WorkerSocket delivers as `data`: an event the worker already decoded and validated. */
export interface DecodedMessage {
  decoded: EngineEvent;
}

export function isDecodedMessage(data: unknown): data is DecodedMessage {
  return typeof data === 'object' && data !== null && 'decoded' in data;
}

/** The worker surface used here (the browser's Worker, or a test's). */
export interface WorkerLike {
  onmessage: ((message: { data: FromSocketWorker }) => void) | null;
  onerror: ((error: { message?: string }) => void) | null;
  postMessage(message: ToSocketWorker): void;
  terminate(): void;
}

const CONNECTING = 0;
const OPEN = 1;
const CLOSING = 2;
const CLOSED = 3;

export function createSocketWorker(): WorkerLike {
  // Vite bundles this as a module worker served from the app's own origin (CSP worker-src 'self').
  return new Worker(new URL('./socket.worker.ts', import.meta.url), { type: 'module', name: 'engine-socket' }) as unknown as WorkerLike;
}

export class WorkerSocket implements SocketLike {
  readyState = CONNECTING;
  onopen: ((ev: unknown) => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  private readonly worker: WorkerLike;

  constructor(url: string, createWorker: () => WorkerLike = createSocketWorker) {
    this.worker = createWorker();
    this.worker.onmessage = (message) => this.receive(message.data);
    // A worker that cannot load (or crashes) ends the link with the reason; the transport retries.
    this.worker.onerror = (error) => this.closed(1011, `the connection worker failed: ${error.message ?? 'unknown error'}`);
    this.worker.postMessage({ type: 'open', url });
  }

  send(text: string): void {
    if (this.readyState !== OPEN) throw new Error('not connected to the engine host');
    this.worker.postMessage({ type: 'send', text });
  }

  close(): void {
    if (this.readyState >= CLOSING) return;
    this.readyState = CLOSING;
    this.worker.postMessage({ type: 'close' });
  }

  private receive(message: FromSocketWorker): void {
    switch (message.type) {
      case 'open':
        this.readyState = OPEN;
        this.onopen?.({});
        return;
      case 'event':
        this.onmessage?.({ data: { decoded: message.event } satisfies DecodedMessage });
        return;
      case 'frame':
        // Scheduled first: a listener that throws must not leave the worker holding frames forever.
        this.ackWhenDrawn();
        this.onmessage?.({ data: { decoded: frameFromText(message.text) } satisfies DecodedMessage });
        return;
      case 'close':
        this.closed(message.code, message.reason);
        return;
    }
  }

  /**
   * Tells the worker the frame is taken once the page reaches its next animation frame, so frames
   * never queue faster than the page draws; a hidden page (no animation frames) still acks.
   */
  private ackWhenDrawn(): void {
    ackAtNextFrame(() => {
      if (this.readyState !== CLOSED) this.worker.postMessage({ type: 'ack' });
    });
  }

  private closed(code: number, reason: string): void {
    if (this.readyState === CLOSED) return;
    this.readyState = CLOSED;
    this.worker.terminate();
    this.onclose?.({ code, reason });
  }
}
