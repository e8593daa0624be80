// Transport over the Electron preload bridge (window.echoStudio): requests go out through one
// bridge method per message type; events come back already validated by the preload.
import { REQUEST_METHODS, parseRequest, type EngineEvent, type EngineRequest, type PreloadBridge } from '../../shared/messages.js';
import { thinFrameEvent } from '../studio/digest.js';
import { Listeners, type ConnectionInfo, type Transport } from './types.js';

export class ElectronTransport implements Transport {
  readonly kind = 'electron' as const;
  private readonly events = new Listeners<EngineEvent>();
  private readonly connection = new Listeners<ConnectionInfo>();
  private readonly unsubscribe: Array<() => void> = [];
  private connected = false;

  constructor(private readonly bridge: PreloadBridge) {}

  connect(): void {
    if (this.unsubscribe.length > 0) return;
    // Frames reach the store in the same shape as over the WebSocket: newest step whole, older ones as digests.
    this.unsubscribe.push(this.bridge.onEvent((event) => this.events.emit(event.type === 'frame' ? thinFrameEvent(event) : event)));
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
    for (const off of this.unsubscribe.splice(0)) off();
  }
}
