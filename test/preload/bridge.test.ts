// The preload bridge and the renderer's ElectronTransport, end to end against a real EngineHost
// over a real MessagePort. Only Electron's ipcRenderer is stood in for, by an EventEmitter that
// delivers what main would send.
import { EventEmitter } from 'node:events';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineHost } from '../../src/host/host.js';
import { nodeMessagePortPort } from '../../src/host/port.js';
import { createBridge, type IpcLike } from '../../src/preload/bridge.js';
import { ElectronTransport } from '../../src/renderer/transport/electron.js';
import type { ConnectionInfo } from '../../src/renderer/transport/types.js';
import { IPC_CHANNELS, REQUEST_METHODS, type EngineEvent } from '../../src/shared/messages.js';

class MainProcessIpc extends EventEmitter implements IpcLike {
  invoked: Array<{ channel: string; args: unknown[] }> = [];
  answer: unknown = '/models/pair';
  override on(channel: string, listener: (...args: any[]) => void): this {
    return super.on(channel, listener);
  }
  async invoke(channel: string, ...args: unknown[]) {
    this.invoked.push({ channel, args });
    return this.answer;
  }
  /** What main does after a page load: one end to the engine host, the other to the preload. */
  handOverPort(host: EngineHost) {
    const channel = new MessageChannel();
    host.attach(nodeMessagePortPort(channel.port1));
    this.emit(IPC_CHANNELS.enginePort, { ports: [channel.port2 as unknown as MessagePort] });
    return channel;
  }
}

function until<T>(items: T[], predicate: (item: T) => boolean): Promise<T> {
  return new Promise((resolve) => {
    const check = () => {
      const found = items.find(predicate);
      if (found !== undefined) resolve(found);
      else setTimeout(check, 5);
    };
    check();
  });
}

let modelsDir: string;
let host: EngineHost;
beforeEach(async () => {
  modelsDir = await mkdtemp(path.join(tmpdir(), 'echo-bridge-'));
  await mkdir(path.join(modelsDir, 'tiny'));
  await writeFile(path.join(modelsDir, 'tiny', 'config.json'), '{}');
  host = new EngineHost({ version: '3.2.1', modelsDir, log: () => {} });
});
afterEach(async () => {
  await host.shutdown();
  await rm(modelsDir, { recursive: true, force: true });
});

describe('preload bridge', () => {
  it('exposes exactly one method per request plus subscriptions and dialogs', () => {
    const bridge = createBridge(new MainProcessIpc());
    const expected = [...Object.values(REQUEST_METHODS), 'onEvent', 'onLinkState', 'chooseModelFolder', 'chooseTraceFile', 'chooseExportPath'];
    expect(Object.keys(bridge).sort()).toEqual(expected.sort());
  });

  it('queues requests until main hands over the port, then talks to the engine host', async () => {
    const ipc = new MainProcessIpc();
    const bridge = createBridge(ipc);
    const events: EngineEvent[] = [];
    const links: string[] = [];
    bridge.onEvent((e) => events.push(e));
    bridge.onLinkState((state) => links.push(state));
    bridge.hello(); // before any port: queued
    expect(() => bridge.traceSeek({ step: -2 })).toThrow(/invalid request \(type trace\.seek\)/);
    const channel = ipc.handOverPort(host);
    const status = await until(events, (e) => e.type === 'status');
    expect(status).toMatchObject({ version: '3.2.1', bundledModels: [{ name: 'tiny' }] });
    expect(links).toEqual(['connecting', 'connected']);

    ipc.emit(IPC_CHANNELS.engineGone, {}, 'the engine host stopped (exit code 1); restarting it');
    expect(links.at(-1)).toBe('disconnected');
    channel.port1.close();
    bridge.runPause(); // queued again while the engine restarts
    ipc.handOverPort(host);
    const error = await until(events, (e) => e.type === 'error');
    expect(error).toMatchObject({ message: 'run.pause failed: no run is in progress to pause' }); // answered by the engine host
  });

  it('turns unreadable engine messages into an error event', async () => {
    const ipc = new MainProcessIpc();
    const bridge = createBridge(ipc);
    const events: EngineEvent[] = [];
    bridge.onEvent((e) => events.push(e));
    ipc.emit(IPC_CHANNELS.engineEvent, {}, { type: 'status', version: 5 });
    expect(events).toEqual([{ type: 'error', message: expect.stringContaining('cannot read') }]);
  });

  it('asks main for dialogs and passes back only non-empty paths', async () => {
    const ipc = new MainProcessIpc();
    const bridge = createBridge(ipc);
    expect(await bridge.chooseModelFolder()).toBe('/models/pair');
    expect(await bridge.chooseExportPath('parquet')).toBe('/models/pair');
    ipc.answer = null;
    expect(await bridge.chooseTraceFile()).toBeNull();
    expect(ipc.invoked).toEqual([
      { channel: IPC_CHANNELS.chooseModelFolder, args: [] },
      { channel: IPC_CHANNELS.chooseExportPath, args: ['parquet'] },
      { channel: IPC_CHANNELS.chooseTraceFile, args: [] },
    ]);
  });
});

describe('ElectronTransport over the bridge', () => {
  it('says hello once connected and routes every request type through its bridge method', async () => {
    const ipc = new MainProcessIpc();
    const transport = new ElectronTransport(createBridge(ipc));
    const events: EngineEvent[] = [];
    const states: ConnectionInfo[] = [];
    transport.onEvent((e) => events.push(e));
    transport.onConnection((c) => states.push(c));
    transport.connect();
    ipc.handOverPort(host);
    expect(await until(events, (e) => e.type === 'status')).toMatchObject({ version: '3.2.1' });
    expect(states.map((s) => s.state)).toEqual(['connecting', 'connected']);
    transport.send({ type: 'trace.export', path: '/tmp/run.parquet', format: 'parquet' });
    expect(await until(events, (e) => e.type === 'error')).toMatchObject({ message: expect.stringMatching(/^trace\.export failed: there is no run or trace/) });
    transport.close();
  });
});
