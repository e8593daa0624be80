// Transport over the Electron preload bridge (window.echoStudio): requests go out through one
// bridge method per message type; events come back already validated by the preload. Frames are
// thinned and paced as the socket worker does for the WebSocket transport (frame-pacer.ts): the
// store, the Super-Tree and the charts take at most one frame per FRAME_MIN_INTERVAL_MS, and one
// only once the page has drawn the last.
import { REQUEST_METHODS, parseRequest, type EngineEvent, type EngineRequest, type PreloadBridge } from '../../shared/messages.js';
import { thinFrameEvent } from '../studio/digest.js';
import { ackAtNextFrame, FramePacer, type FramePacerOptions } from './frame-pacer.js';
import { Listeners, type ConnectionInfo, type Transport } from './types.js';

export class ElectronTransport implements Transport {
  readonly kind = 'electron' as const;
  private readonly events = new Listeners<EngineEvent>();
  private readonly connection = new Listeners<ConnectionInfo>();
  private readonly unsubscribe: Array<() => void> = [];
  private connected = false;
  private pacer: FramePacer | null = null;

  constructor(
    private readonly bridge: PreloadBridge,
    private readonly pacing: FramePacerOptions = {},
  ) {}

  connect(): void {
    if (this.unsubscribe.length > 0) return;
    // Frames reach the store in the same shape and at the same pace as over the WebSocket: newest
    // step whole, older ones as digests, one frame until the page has drawn it.
    const pacer = new FramePacer((event) => {
      if (this.pacer !== pacer) return;
      if (event.type === 'frame') ackAtNextFrame(() => pacer.ack());
      this.events.emit(event);
    }, this.pacing);
    this.pacer = pacer;
    this.unsubscribe.push(this.bridge.onEvent((event) => pacer.push(event.type === 'frame' ? thinFrameEvent(event) : event)));
    this.unsubscribe.push(
      this.bridge.onLinkState((state, detail) => {
        const becameConnected = state === 'connected' && !this.connected;
        this.connected = state === 'connected';
        this.connection.emit(detail === undefined ? { state } : { state, detail });
        if (becameConnected) this.bridge.hello();
      }),
    );
  }

  send(request: EngineRequest): void {
    const parsed = parseRequest(request);
    if (!parsed.ok) throw new Error(parsed.error);
    const { type, ...payload } = parsed.value;
    const method = this.bridge[REQUEST_METHODS[type]] as (payload?: object) => void;
    method(payload);
  }

  onEvent(listener: (event: EngineEvent) => void): () => void {
    return this.events.add(listener);
  }

  onConnection(listener: (info: ConnectionInfo) => void): () => void {
    return this.connection.add(listener);
  }

  close(): void {
    // A frame still held (or its timer) goes nowhere once closed.
    this.pacer = null;
    for (const off of this.unsubscribe.splice(0)) off();
  }
}
