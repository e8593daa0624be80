// Request handlers of the engine host. The host itself only routes: each request type is handled
// by at most one handler, contributed by a handler module. To add engine features (run, knobs,
// trace, model), write a module `(host) => ({ 'run.start': …, … })` and add it to HANDLER_MODULES.
// A request nobody handles is answered with a one-line error naming it.
import type { DepthHistogram, RunMetrics, StepEvent } from '../shared/events.js';
import type { EngineEvent, RequestOf, RequestType, RunState, StatusEvent } from '../shared/messages.js';
import { hwHandlers } from './hw-handlers.js';
import { modelHandlers } from './model-handlers.js';
import { runHandlers } from './run-handlers.js';
import { traceHandlers } from './trace-handlers.js';

/** What every handler module gets from the host. */
export interface HostContext {
  readonly version: string;
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
  /** Registers cleanup run when the host shuts down (release sessions, close traces). */
  onShutdown(cleanup: () => void | Promise<void>): void;
  /**
   * Registers what a client that says hello gets after the status: the picture of the current run
   * or replay, so a page opened (or reloaded) later shows what the others show.
   */
  onHello(greet: (ctx: RequestContext) => void | Promise<void>): void;
  /** Runs the registered greetings for one client (the hello handler does). */
  greet(ctx: RequestContext): Promise<void>;
}

/** What a handler gets for one request: the host plus a way to answer only the asker. */
export interface RequestContext extends HostContext {
  reply(event: EngineEvent): void;
}

/** Handlers may run long (a run loop); the host does not wait for one before routing the next. */
export type Handler<T extends RequestType> = (request: RequestOf<T>, ctx: RequestContext) => void | Promise<void>;
export type HandlerTable = { [T in RequestType]?: Handler<T> };
export type HandlerModule = (host: HostContext) => HandlerTable;

/** Built into the host: the greeting that tells a new client who it is talking to. */
export const coreHandlers: HandlerModule = () => ({
  async hello(_request, ctx) {
    ctx.reply(await ctx.refreshStatus());
    await ctx.greet(ctx);
  },
});

/** Every handler module the engine host loads, in order. */
export const HANDLER_MODULES: HandlerModule[] = [coreHandlers, runHandlers, traceHandlers, modelHandlers, hwHandlers];

/** Merges modules into one table; two modules claiming one request type is a wiring bug. */
export function buildHandlerTable(modules: HandlerModule[], host: HostContext): HandlerTable {
  const table: HandlerTable = {};
  for (const module of modules) {
    const contributed = module(host);
    for (const type of Object.keys(contributed) as RequestType[]) {
      if (table[type]) throw new Error(`two handler modules both handle '${type}'`);
      (table as Record<string, unknown>)[type] = contributed[type];
    }
  }
  return table;
}
