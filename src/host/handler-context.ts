// What a handler module is given: the host (events, frames, run state, lifecycle hooks) and the
// state that several modules share. Handler modules import only this module and what they use from
// the engine; the table of modules (HANDLER_MODULES in host.ts) imports them, never the other way round.
import type { DepthHistogram, RunMetrics, StepEvent } from '../shared/events.js';
import type { EngineEvent, RequestOf, RequestType, RunState, StatusEvent } from '../shared/messages.js';
import type { FileAccess } from './allowed-folders.js';
import type { Recordings } from './recordings.js';

/** What every handler module gets from the host. */
export interface HostContext {
  readonly version: string;
  /**
   * The paths clients may read and write: any in the desktop app (its paths come from dialogs),
   * only the folders the user chose for the web host. Handlers resolve every client path here first.
   */
  readonly files: FileAccess;
  /** The studio's data folder: where the studio writes what it makes (reports of the quick study). */
  readonly dataDir: string;
  /** The current status (version, bundled models, provider, run state). */
  status(): StatusEvent;
  /** Re-reads assets/models; returns the fresh status. */
  refreshStatus(): Promise<StatusEvent>;
  /** Sets the execution provider reported in status ('cpu', 'cuda', …). */
  setProvider(provider: string): void;
  /** Sends an event to every client now. */
  broadcast(event: EngineEvent): void;
  /** Queues a step event (and optional snapshots) for the next frame; frames go out ≤ 30/s. */
  pushStep(step: StepEvent | null, extras?: { histograms?: DepthHistogram[]; metrics?: RunMetrics }): void;
  /** Sends queued steps now. */
  flushFrames(): void;
  /** Flushes pending frames, records the state and broadcasts run.state. */
  setRunState(state: RunState): void;
  progress(task: string, done: number, total: number, message?: string): void;
  /** Writes a line to the host's diagnostics (stderr unless the host was given a log). */
  log(line: string): void;
  /** Registers cleanup run when the host shuts down (release sessions, close traces). */
  onShutdown(cleanup: () => void | Promise<void>): void;
  /**
   * Registers what a client that says hello gets after the status: the picture of the current run
   * or replay, so a page opened (or reloaded) later shows what the others show.
   */
  onHello(greet: (ctx: RequestContext) => void | Promise<void>): void;
  /** Runs the registered greetings for one client (the hello handler does). */
  greet(ctx: RequestContext): Promise<void>;
  /** Registers what to do when the last client someone looks through goes: free what only they needed. */
  onViewersGone(hook: () => void): void;
  /** Resolves once every client's channel has passed on what was sent (long replays wait for it). */
  whenDelivered(): Promise<void>;
}

/** What a handler gets for one request: the host plus a way to answer only the asker. */
export interface RequestContext extends HostContext {
  reply(event: EngineEvent): void;
  /** False once the asker has gone (a long answer stops then). */
  connected(): boolean;
}

/** One host's handler modules, built together: the host and the state they share. */
export interface HandlerContext {
  readonly host: HostContext;
  /** The live run's recording and the opened trace: the run handlers write it, the trace handlers read it. */
  readonly recordings: Recordings;
  /** Whether the quick study runs now: it takes the cores, so runs and timings wait for it. */
  readonly study: { running: boolean };
}

/** Handlers may run long (a run loop); the host does not wait for one before routing the next. */
export type Handler<T extends RequestType> = (request: RequestOf<T>, ctx: RequestContext) => void | Promise<void>;
export type HandlerTable = { [T in RequestType]?: Handler<T> };
export type HandlerModule = (context: HandlerContext) => HandlerTable;
