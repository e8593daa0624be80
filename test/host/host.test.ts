import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HandlerModule } from '../../src/host/handler-context.js';
import { availablePolicies, createPolicy, registerPolicy } from '../../src/engine/policy/index.js';
import { bundledDomains } from '../../src/engine/run/session-run.js';
import { coreHandlers, EngineHost } from '../../src/host/host.js';
import { Refusal } from '../../src/engine/refusal.js';
import { nodeMessagePortPort } from '../../src/host/port.js';
import { parseEvent, type EngineEvent } from '../../src/shared/messages.js';
import { sampleStep } from '../shared/fixtures.js';

let modelsDir: string;

beforeEach(async () => {
  modelsDir = await mkdtemp(path.join(tmpdir(), 'echo-host-'));
  await mkdir(path.join(modelsDir, 'demo-target'));
  await writeFile(path.join(modelsDir, 'demo-target', 'config.json'), '{"model_type":"llama"}');
});
afterEach(async () => {
  await rm(modelsDir, { recursive: true, force: true });
});

/** Attaches a real MessageChannel to the host and collects the validated events that come back. */
function connect(host: EngineHost) {
  const channel = new MessageChannel();
  host.attach(nodeMessagePortPort(channel.port1));
  const events: EngineEvent[] = [];
  const waiters: Array<() => void> = [];
  channel.port2.on('message', (data) => {
    const parsed = parseEvent(data);
    if (!parsed.ok) throw new Error(parsed.error);
    events.push(parsed.value);
    for (const wake of waiters.splice(0)) wake();
  });
  async function next(type: EngineEvent['type']): Promise<EngineEvent> {
    for (;;) {
      const found = events.findIndex((e) => e.type === type);
      if (found >= 0) return events.splice(found, 1)[0];
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  }
  return { send: (msg: unknown) => channel.port2.postMessage(msg), next, events, close: () => channel.port2.close() };
}

describe('EngineHost', () => {
  it('answers hello with its version and the bundled models it finds', async () => {
    const host = new EngineHost({ version: '9.9.9', modelsDir, log: () => {} });
    const client = connect(host);
    client.send({ type: 'hello' });
    const status = await client.next('status');
    expect(status).toEqual({
      type: 'status',
      version: '9.9.9',
      bundledModels: [{ name: 'demo-target', dir: path.join(modelsDir, 'demo-target') }],
      provider: 'cpu',
      draftPrecision: 'int8',
      domains: bundledDomains(),
      policies: availablePolicies(),
      runState: 'idle',
    });
    client.close();
    await host.shutdown();
  });

  it("lists a policy the host's program registered, so the run form offers it", async () => {
    registerPolicy('host-listed', (options) => createPolicy('chain', options));
    const host = new EngineHost({ version: '1', modelsDir, log: () => {} });
    const client = connect(host);
    client.send({ type: 'hello' });
    const status = await client.next('status');
    expect(status).toMatchObject({ policies: expect.arrayContaining(['ar', 'echo', 'host-listed']) });
    client.close();
    await host.shutdown();
  });

  it('answers invalid and unhandled requests with an error, and keeps serving', async () => {
    const host = new EngineHost({ version: '1', modelsDir, modules: [coreHandlers], log: () => {} });
    const client = connect(host);
    client.send({ type: 'model.open' });
    expect(await client.next('error')).toMatchObject({ message: expect.stringContaining('invalid request (type model.open)') });
    client.send({ type: 'run.pause' });
    expect(await client.next('error')).toMatchObject({ message: expect.stringContaining("'run.pause' is not available") });
    client.send({ type: 'hello' });
    expect(await client.next('status')).toMatchObject({ version: '1' });
    client.close();
    await host.shutdown();
  });

  it('routes to registered handlers, broadcasts run state and frames, reports handler failures', async () => {
    const runModule: HandlerModule = () => ({
      'run.step'(_request, ctx) {
        ctx.pushStep(sampleStep(0));
        ctx.pushStep(sampleStep(1));
        ctx.setRunState('paused');
      },
      'trace.seek'(request) {
        throw new Error(`no trace loaded, cannot seek to ${request.step}`);
      },
    });
    const host = new EngineHost({ version: '1', modelsDir, modules: [coreHandlers, runModule], log: () => {} });
    const asker = connect(host);
    const watcher = connect(host);
    asker.send({ type: 'run.step' });
    for (const client of [asker, watcher]) {
      const frames: number[] = [];
      while (!frames.includes(1)) {
        const frame = await client.next('frame');
        if (frame.type === 'frame') frames.push(...frame.steps.map((s) => s.step));
      }
      expect(frames).toEqual([0, 1]);
      expect(await client.next('run.state')).toEqual({ type: 'run.state', state: 'paused' });
    }
    asker.send({ type: 'trace.seek', step: 4 });
    expect(await asker.next('error')).toMatchObject({ message: 'trace.seek failed: no trace loaded, cannot seek to 4' });
    asker.send({ type: 'hello' });
    expect(await asker.next('status')).toMatchObject({ runState: 'paused' });
    asker.close();
    watcher.close();
    await host.shutdown();
  });

  it('logs a refusal in one line without a stack; a fault keeps its stack in the log and the event', async () => {
    const failing: HandlerModule = () => ({
      'run.pause'() {
        throw new Refusal('no run is in progress to pause');
      },
      'run.resume'() {
        const knobs = undefined as unknown as { batch: number };
        knobs.batch += 1; // a fault: a TypeError from inside the handler
      },
    });
    const log: string[] = [];
    const host = new EngineHost({ version: '1', modelsDir, modules: [coreHandlers, failing], log: (line) => log.push(line) });
    const client = connect(host);
    client.send({ type: 'run.pause' });
    const refused = await client.next('error');
    expect(refused).toEqual({ type: 'error', message: 'run.pause failed: no run is in progress to pause' });
    expect(log).toEqual(['run.pause failed: no run is in progress to pause']);
    client.send({ type: 'run.resume' });
    const fault = await client.next('error');
    if (fault.type !== 'error') throw new Error(`expected an error event, got ${fault.type}`);
    expect(fault.message).toMatch(/^run\.resume failed: Cannot read properties of undefined/);
    const stackLine = /\n\s+at .*host\.test\.ts/;
    expect(fault.detail).toMatch(stackLine);
    expect(log).toHaveLength(2);
    expect(log[1]).toMatch(/^run\.resume failed: TypeError: Cannot read properties of undefined/);
    expect(log[1]).toMatch(stackLine);
    client.close();
    await host.shutdown();
  });

  it('refuses two modules handling the same request', () => {
    const again: HandlerModule = () => ({ hello() {} });
    expect(() => new EngineHost({ version: '1', modelsDir, modules: [coreHandlers, again], log: () => {} })).toThrow(
      "two handler modules both handle 'hello'",
    );
  });
});
