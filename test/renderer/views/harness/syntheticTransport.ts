// A Transport that plays a synthetic ECHO run instead of talking to an engine host: frames at up
// to 30/s like the real host, pause/step/resume/stop, and knobs.set applied from the next step
// (so a dragged τ shows up in the gate checks the views draw). For visual checks and the benchmark.
import type { EngineEvent, EngineRequest } from '../../../../src/shared/messages.js';
import { Listeners, type ConnectionInfo, type Transport } from '../../../../src/renderer/transport/types.js';
import { SyntheticRun } from '../../studio/syntheticSteps.js';

export interface SyntheticTransportOptions {
  batch: number;
  kmax: number;
  /** Steps the engine makes per second; frames batch them at most 30 times a second. */
  stepsPerSecond: number;
  /** Start streaming on connect (without a run.start). */
  autostart?: boolean;
}

export class SyntheticTransport implements Transport {
  readonly kind = 'websocket' as const;
  readonly sent: EngineRequest[] = [];
  private readonly events = new Listeners<EngineEvent>();
  private readonly connection = new Listeners<ConnectionInfo>();
  private run: SyntheticRun;
  private timer: ReturnType<typeof setInterval> | null = null;
  private owed = 0;
  private state: 'idle' | 'running' | 'paused' | 'finished' = 'idle';

  constructor(private readonly options: SyntheticTransportOptions) {
    this.run = new SyntheticRun({ batch: options.batch, kmax: options.kmax });
  }

  connect(): void {
    this.connection.emit({ state: 'connected' });
    this.emit({
      type: 'status',
      version: 'synthetic',
      bundledModels: [{ name: 'synthetic-pair', dir: 'synthetic' }],
      provider: 'none',
      runState: 'idle',
    });
    if (this.options.autostart) this.start(this.options.batch, this.options.kmax);
  }

  private emit(event: EngineEvent): void {
    this.events.emit(event);
  }

  private setState(state: SyntheticTransport['state']): void {
    this.state = state;
    this.emit({ type: 'run.state', state });
  }

  private start(batch: number, kmax: number, taus?: Record<string, number>): void {
    this.run = new SyntheticRun({ batch, kmax, ...(taus ? { taus } : {}) });
    this.emit({ type: 'progress', task: 'model load', done: 1, total: 1 });
    this.setState('running');
    this.owed = 0;
    if (this.timer !== null) clearInterval(this.timer);
    const frameMs = 1000 / 30;
    this.timer = setInterval(() => {
      if (this.state !== 'running') return;
      this.owed += (this.options.stepsPerSecond * frameMs) / 1000;
      const count = Math.floor(this.owed);
      if (count === 0) return;
      this.owed -= count;
      this.frame(count);
    }, frameMs);
  }

  private frame(count: number): void {
    const steps = Array.from({ length: count }, () => this.run.next());
    this.emit({ type: 'frame', steps, histograms: this.run.histograms() });
  }

  send(request: EngineRequest): void {
    this.sent.push(request);
    switch (request.type) {
      case 'run.start':
        this.start(request.config.batch, request.config.kmax, request.config.taus);
        return;
      case 'run.pause':
        if (this.state === 'running') this.setState('paused');
        return;
      case 'run.resume':
        if (this.state === 'paused') this.setState('running');
        return;
      case 'run.step':
        if (this.state === 'paused') this.frame(1);
        return;
      case 'run.stop':
        this.setState('finished');
        return;
      case 'knobs.set':
        if (request.knobs.taus) this.run.setTaus(request.knobs.taus);
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
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}
