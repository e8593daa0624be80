// Transport over the web host's WebSocket. The access token comes from the page's own URL
// (?token=…), as printed by `echo-studio serve`; the link reconnects with backoff when dropped.
// In a browser the socket lives in a worker (worker-socket.ts) that parses and validates messages
// off the main thread; elsewhere (tests) a plain socket's text is decoded here, the same way.
import { encodeMessage, parseRequest, type EngineEvent, type EngineRequest } from '../../shared/messages.js';
import { decodeIncoming } from './decode.js';
import { Listeners, type ConnectionInfo, type Transport } from './types.js';
import { isDecodedMessage, WorkerSocket } from './worker-socket.js';

/** The minimal WebSocket surface used here (the browser's, or a test's). */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: unknown) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  send(data: string): void;
  close(): void;
}

const OPEN = 1;
const RETRY_DELAYS_MS = [250, 500, 1000, 2000, 4000];

/** ws:// or wss:// URL of the host's socket for a page at `pageUrl`, carrying its token. */
export function socketUrlFor(pageUrl: string): string {
  const page = new URL(pageUrl);
  const protocol = page.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = new URL(`${protocol}//${page.host}/ws`);
  const token = page.searchParams.get('token');
  if (token) url.searchParams.set('token', token);
  return url.toString();
}

function defaultSocket(url: string): SocketLike {
  return typeof Worker === 'undefined' ? (new WebSocket(url) as unknown as SocketLike) : new WorkerSocket(url);
}

export class WebSocketTransport implements Transport {
  readonly kind = 'websocket' as const;
  private socket: SocketLike | null = null;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private closed = false;
  private readonly events = new Listeners<EngineEvent>();
  private readonly connection = new Listeners<ConnectionInfo>();

  constructor(
    private readonly url: string,
    private readonly createSocket: (url: string) => SocketLike = defaultSocket,
  ) {}

  connect(): void {
    if (this.closed || this.socket) return;
    this.connection.emit({ state: 'connecting', detail: this.attempt > 0 ? `reconnecting (attempt ${this.attempt + 1})` : undefined });
    const socket = this.createSocket(this.url);
    this.socket = socket;
    socket.onopen = () => {
      this.attempt = 0;
      this.connection.emit({ state: 'connected' });
      socket.send(encodeMessage({ type: 'hello' }));
    };
    socket.onmessage = (ev) => {
      const event = isDecodedMessage(ev.data) ? ev.data.decoded : decodeIncoming(ev.data);
      if (event) this.events.emit(event);
    };
    socket.onclose = (ev) => {
      this.socket = null;
      if (this.closed) return;
      const delay = RETRY_DELAYS_MS[Math.min(this.attempt, RETRY_DELAYS_MS.length - 1)];
      this.attempt += 1;
      this.connection.emit({
        state: 'disconnected',
        detail: `lost the engine host${ev.reason ? ` (${ev.reason})` : ' (is echo-studio serve still running, and was the page opened with its token URL?)'}; retrying in ${Math.round(delay / 100) / 10} s`,
      });
      this.retryTimer = setTimeout(() => {
        this.retryTimer = null;
        this.connect();
      }, delay);
    };
    socket.onerror = () => {
      // onclose follows and carries the retry; nothing else useful is in the error event.
    };
  }

  send(request: EngineRequest): void {
    const parsed = parseRequest(request);
    if (!parsed.ok) throw new Error(parsed.error);
    if (!this.socket || this.socket.readyState !== OPEN) throw new Error('not connected to the engine host');
    this.socket.send(encodeMessage(parsed.value));
  }

  onEvent(listener: (event: EngineEvent) => void): () => void {
    return this.events.add(listener);
  }

  onConnection(listener: (info: ConnectionInfo) => void): () => void {
    return this.connection.add(listener);
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.socket?.close();
    this.socket = null;
  }
}
