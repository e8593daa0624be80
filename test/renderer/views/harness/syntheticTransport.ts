// A Transport that plays a synthetic ECHO run from a worker instead of talking to an engine host:
// frames at up to 30/s like the real host, pause/step/resume/stop, and knobs.set applied from the
// next step (so a dragged τ shows up in the gate checks the views draw). With decode 'main' the
// page decodes and validates each frame exactly as the WebSocket transport does.
import { decodeText, parseEvent, type EngineEvent, type EngineRequest } from '../../../../src/shared/messages.js';
import { Listeners, type ConnectionInfo, type Transport } from '../../../../src/renderer/transport/types.js';
import { frameFromText } from '../../../../src/renderer/transport/frame-text.js';
import type { EngineCommand, EngineOutput } from './syntheticEngine.worker.js';

export interface SyntheticTransportOptions {
  batch: number;
  kmax: number;
  /** Steps the engine makes per second; frames batch them at most 30 times a second. */
  stepsPerSecond: number;
  /** Start streaming on connect (without a run.start). */
  autostart?: boolean;
  decode: 'main' | 'worker' | 'thin';
  /** 'thin': least time between frames (ms); the socket worker's own pacing unless given. */
  paceMs?: number;
}

export class SyntheticTransport implements Transport {
  readonly kind = 'websocket' as const;
  readonly sent: EngineRequest[] = [];
  /** Main-thread milliseconds spent decoding frames: parse + validate (decode 'main'), parse (decode 'thin'). */
  decodeMs = 0;
  private readonly events = new Listeners<EngineEvent>();
  private readonly connection = new Listeners<ConnectionInfo>();
  private worker: Worker | null = null;
  private state: 'idle' | 'running' | 'paused' | 'finished' = 'idle';

  constructor(private readonly options: SyntheticTransportOptions) {}

  connect(): void {
    this.worker = new Worker(new URL('./syntheticEngine.worker.ts', import.meta.url), { type: 'module' });
    this.worker.onmessage = (message: MessageEvent<EngineOutput>) => this.receive(message.data);
    this.worker.onerror = (e) => this.emit({ type: 'error', message: 'the synthetic engine worker failed', detail: e.message });
    this.connection.emit({ state: 'connected' });
    this.emit({
      type: 'status',
      version: 'synthetic',
      bundledModels: [{ name: 'synthetic-pair', dir: 'synthetic' }],
      provider: 'none',
      domains: ['code', 'math', 'prose'],
      runState: 'idle',
    });
    if (this.options.autostart) this.start(this.options.batch, this.options.kmax);
  }

  private receive(output: EngineOutput): void {
    if (output.type === 'frame') {
      // As WorkerSocket does: parse the frame's text, take it at the next animation frame.
      const t0 = performance.now();
      const frame = frameFromText(output.text);
      this.decodeMs += performance.now() - t0;
      this.emit(frame);
      requestAnimationFrame(() => this.command({ type: 'ack' }));
      return;
    }
    if (output.type === 'event') {
      this.emit(output.event);
      return;
    }
    const t0 = performance.now();
    const decoded = decodeText(output.text);
    const parsed = decoded.ok ? parseEvent(decoded.value) : decoded;
    this.decodeMs += performance.now() - t0;
    this.emit(parsed.ok ? parsed.value : { type: 'error', message: `unreadable frame: ${parsed.error}` });
  }

  private command(command: EngineCommand): void {
    this.worker?.postMessage(command);
  }

  private emit(event: EngineEvent): void {
    this.events.emit(event);
  }

  private setState(state: SyntheticTransport['state']): void {
    this.state = state;
    this.emit({ type: 'run.state', state });
  }

  private start(batch: number, kmax: number, taus?: Record<string, number>): void {
    this.emit({ type: 'progress', task: 'model load', done: 1, total: 1 });
    this.command({ type: 'start', batch, kmax, stepsPerSecond: this.options.stepsPerSecond, decode: this.options.decode, ...(taus ? { taus } : {}), ...(this.options.paceMs !== undefined ? { paceMs: this.options.paceMs } : {}) });
    this.setState('running');
  }

  send(request: EngineRequest): void {
    this.sent.push(request);
    switch (request.type) {
      case 'run.start':
        this.start(request.config.batch, request.config.kmax, request.config.taus);
        return;
      case 'run.pause':
        if (this.state !== 'running') return;
        this.command({ type: 'pause' });
        this.setState('paused');
        return;
      case 'run.resume':
        if (this.state !== 'paused') return;
        this.command({ type: 'resume' });
        this.setState('running');
        return;
      case 'run.step':
        if (this.state === 'paused') this.command({ type: 'step' });
        return;
      case 'run.stop':
        this.command({ type: 'stop' });
        this.setState('finished');
        return;
      case 'knobs.set':
        if (request.knobs.taus) this.command({ type: 'taus', taus: request.knobs.taus });
        return;
      default:
        this.emit({ type: 'error', message: `the synthetic engine does not handle ${request.type}` });
    }
  }

  onEvent(listener: (event: EngineEvent) => void): () => void {
    return this.events.add(listener);
  }

  onConnection(listener: (info: ConnectionInfo) => void): () => void {
    return this.connection.add(listener);
  }

  close(): void {
    this.worker?.terminate();
    this.worker = null;
  }
}
