// The engine host's core, independent of how it was started: clients attach through HostPorts,
// requests are validated and routed to the handler table, events go back to the asker or to all.
// The host itself only routes: each request type is handled by at most one handler, contributed
// by a handler module (HANDLER_MODULES below: run-handlers.ts handles run.*, trace-handlers.ts
// trace.*, …). To add engine features, write a module `({ host }) => ({ 'run.start': …, … })` and
// add it there. A request nobody handles is answered with a one-line error naming it.
import path from 'node:path';
import { FrameCoalescer, systemClock, type FrameClock } from './frame-coalescer.js';
import { findBundledModels } from './bundled-models.js';
import { defaultDraftPrecision } from '../shared/config.js';
import { availablePolicies, bundledDomains, faultStack } from '../engine/index.js';
import type { HandlerModule, HandlerTable, HostContext, RequestContext } from './handler-context.js';
import { clockHandlers } from './clock-handlers.js';
import { hwHandlers } from './hw-handlers.js';
import { modelHandlers } from './model-handlers.js';
import { Recordings } from './recordings.js';
import { reportHandlers } from './report-handlers.js';
import { runHandlers } from './run-handlers.js';
import { traceHandlers } from './trace-handlers.js';
import type { HostPort } from './port.js';
import { ANY_PATH, type FileAccess } from './allowed-folders.js';
import { parseRequest, type BundledModel, type EngineEvent, type EngineRequest, type RunState, type StatusEvent } from '../shared/messages.js';

/** Built into the host: the greeting that tells a new client who it is talking to. */
export const coreHandlers: HandlerModule = () => ({
  async hello(_request, ctx) {
    ctx.reply(await ctx.refreshStatus());
    await ctx.greet(ctx);
  },
});

/** Every handler module the engine host loads, in order. */
export const HANDLER_MODULES: HandlerModule[] = [coreHandlers, runHandlers, traceHandlers, modelHandlers, hwHandlers, clockHandlers, reportHandlers];

/**
 * Builds the modules over one shared context and merges them into one table; two modules claiming
 * one request type is a wiring bug.
 */
export function buildHandlerTable(modules: HandlerModule[], host: HostContext): HandlerTable {
  const context = { host, recordings: new Recordings(), study: { running: false } };
  const table: HandlerTable = {};
  for (const module of modules) {
    const contributed = module(context);
    for (const type of Object.keys(contributed) as (keyof HandlerTable)[]) {
      if (table[type]) throw new Error(`two handler modules both handle '${type}'`);
      (table as Record<string, unknown>)[type] = contributed[type];
    }
  }
  return table;
}

export interface EngineHostOptions {
  version: string;
  modelsDir: string;
  /** The studio's data folder (default: the current folder). */
  dataDir?: string;
  modules?: HandlerModule[];
  clock?: FrameClock;
  /** The paths clients may use (default: any, as in the desktop app). */
  files?: FileAccess;
  /** Where diagnostics go (stderr of the host process by default). */
  log?: (line: string) => void;
}

export class EngineHost {
  private readonly clients = new Set<HostPort>();
  /** Clients that get only answers to their own requests, no broadcasts. */
  private readonly replyOnly = new Set<HostPort>();
  /** Clients someone looks through (a page, a browser tab): when none is left, what they saw can go. */
  private readonly viewers = new Set<HostPort>();
  private readonly idleHooks: Array<() => void> = [];
  private readonly frames: FrameCoalescer;
  private readonly handlers: HandlerTable;
  private readonly cleanups: Array<() => void | Promise<void>> = [];
  private readonly greetings: Array<(ctx: RequestContext) => void | Promise<void>> = [];
  private readonly log: (line: string) => void;
  private bundledModels: BundledModel[] = [];
  private domains: string[] = [];
  private provider = 'cpu';
  private runState: RunState = 'idle';
  readonly context: HostContext;

  constructor(private readonly options: EngineHostOptions) {
    this.log = options.log ?? ((line) => process.stderr.write(`engine host: ${line}\n`));
    this.frames = new FrameCoalescer((frame) => this.broadcast(frame), options.clock ?? systemClock);
    this.context = this.makeContext();
    this.handlers = buildHandlerTable(options.modules ?? HANDLER_MODULES, this.context);
  }

  /**
   * Adds a client. `broadcasts: false` is for Electron's main process: it only sends menu
   * requests and forwards the answers, while the renderer hears broadcasts on its own port.
   * `viewer` (by default: whether it hears broadcasts) says someone looks through it; a forked
   * channel's fan-out port is none, each browser client behind it is one.
   */
  attach(port: HostPort, { broadcasts = true, viewer = broadcasts }: { broadcasts?: boolean; viewer?: boolean } = {}): void {
    this.clients.add(port);
    if (!broadcasts) this.replyOnly.add(port);
    if (viewer) this.viewers.add(port);
    port.onMessage((data) => this.receive(data, port));
    port.onClose(() => {
      this.clients.delete(port);
      this.replyOnly.delete(port);
      if (this.viewers.delete(port) && this.viewers.size === 0) {
        for (const hook of this.idleHooks) hook();
      }
    });
  }

  /** Resolves once every client's channel has handed what was posted to it to the system. */
  async whenDelivered(): Promise<void> {
    const backlogged = () => [...this.clients].some((client) => (client.backlog?.() ?? 0) > 0);
    while (backlogged()) await new Promise((resolve) => setTimeout(resolve, 1));
  }

  get clientCount(): number {
    return this.clients.size;
  }

  broadcast(event: EngineEvent): void {
    for (const client of this.clients) if (!this.replyOnly.has(client)) client.post(event);
  }

  status(): StatusEvent {
    return {
      type: 'status',
      version: this.options.version,
      bundledModels: this.bundledModels,
      provider: this.provider,
      draftPrecision: defaultDraftPrecision(this.provider === 'cuda' ? 'cuda' : 'cpu'),
      domains: this.domains,
      policies: availablePolicies(),
      runState: this.runState,
    };
  }

  async refreshStatus(): Promise<StatusEvent> {
    const scan = await findBundledModels(this.options.modelsDir);
    for (const problem of scan.problems) this.log(problem);
    this.bundledModels = scan.models;
    this.domains = bundledDomains();
    return this.status();
  }

  async shutdown(): Promise<void> {
    this.frames.flush();
    for (const cleanup of this.cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (err) {
        this.log(`cleanup failed: ${(err as Error).message}`);
      }
    }
    this.frames.dispose();
    for (const client of this.clients) client.close();
    this.clients.clear();
  }

  /** Routes one incoming message from a client. Invalid input gets an error back, never a crash. */
  receive(data: unknown, from: HostPort): void {
    const parsed = parseRequest(data);
    if (!parsed.ok) {
      from.post({ type: 'error', message: parsed.error });
      return;
    }
    void this.dispatch(parsed.value, from);
  }

  private async dispatch(request: EngineRequest, from: HostPort): Promise<void> {
    const handler = this.handlers[request.type] as ((r: EngineRequest, c: RequestContext) => void | Promise<void>) | undefined;
    if (!handler) {
      from.post({ type: 'error', message: `'${request.type}' is not available in this build: no engine handler is registered for it` });
      return;
    }
    const ctx: RequestContext = { ...this.context, reply: (event) => from.post(event), connected: () => this.clients.has(from) };
    try {
      await handler(request, ctx);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      const message = `${request.type} failed: ${error.message}`;
      // A refusal (a bad folder or file, a request that cannot run now) is expected: one line says
      // it all. Anything else is a fault, and its stack is kept in the log and the event.
      const stack = faultStack(error);
      this.log(stack === undefined ? message.split('\n')[0] : `${request.type} failed: ${stack}`);
      from.post(stack === undefined ? { type: 'error', message } : { type: 'error', message, detail: stack });
    }
  }

  private makeContext(): HostContext {
    return {
      version: this.options.version,
      files: this.options.files ?? ANY_PATH,
      dataDir: path.resolve(this.options.dataDir ?? process.cwd()),
      status: () => this.status(),
      refreshStatus: () => this.refreshStatus(),
      setProvider: (provider) => {
        this.provider = provider;
      },
      broadcast: (event) => this.broadcast(event),
      pushStep: (step, extras) => this.frames.push(step, extras),
      flushFrames: () => this.frames.flush(),
      setRunState: (state) => {
        this.frames.flush();
        this.runState = state;
        this.broadcast({ type: 'run.state', state });
      },
      progress: (task, done, total, message) => {
        this.broadcast(message === undefined ? { type: 'progress', task, done, total } : { type: 'progress', task, done, total, message });
      },
      log: (line) => this.log(line),
      onShutdown: (cleanup) => {
        this.cleanups.push(cleanup);
      },
      onHello: (greet) => {
        this.greetings.push(greet);
      },
      onViewersGone: (hook) => {
        this.idleHooks.push(hook);
      },
      whenDelivered: () => this.whenDelivered(),
      greet: async (ctx) => {
        for (const greet of this.greetings) await greet(ctx);
      },
    };
  }
}
