// Request handlers of the engine host. The host itself only routes: each request type is handled
// by at most one handler, contributed by a handler module. To add engine features (run, knobs,
// trace, model), write a module `({ host }) => ({ 'run.start': …, … })` and add it to HANDLER_MODULES.
// A request nobody handles is answered with a one-line error naming it.
import { clockHandlers } from './clock-handlers.js';
import type { HandlerModule, HandlerTable, HostContext } from './handler-context.js';
import { hwHandlers } from './hw-handlers.js';
import { modelHandlers } from './model-handlers.js';
import { reportHandlers } from './report-handlers.js';
import { Recordings } from './recordings.js';
import { runHandlers } from './run-handlers.js';
import { traceHandlers } from './trace-handlers.js';

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
