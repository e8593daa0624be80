// The renderer's WebSocket transport against the real web host and engine host (Node's `ws`
// client stands in for the browser's WebSocket: same onopen/onmessage/readyState surface).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startWebHost, type WebHost } from '../../../src/host/web-host.js';
import { socketUrlFor, WebSocketTransport, type SocketLike } from '../../../src/renderer/transport/websocket.js';
import type { ConnectionInfo } from '../../../src/renderer/transport/types.js';
import type { EngineEvent } from '../../../src/shared/messages.js';
import { missingBuild, paths, writeModelsFolder } from '../../host/helpers.js';

const skipReason = missingBuild();
if (skipReason) console.warn(`skipping WebSocket transport tests: ${skipReason}`);

let host: WebHost;
let scratch: string;

beforeAll(async () => {
  if (skipReason) return;
  scratch = await mkdtemp(path.join(tmpdir(), 'echo-transport-'));
  await writeModelsFolder(path.join(scratch, 'models'));
  host = await startWebHost({ port: 0, rendererDir: scratch, engineHostEntry: paths.engineHostEntry, modelsDir: path.join(scratch, 'models'), log: () => {} });
});

afterAll(async () => {
  if (skipReason) return;
  await host.close();
  await rm(scratch, { recursive: true, force: true });
});

function browserLikeSocket(origin: string) {
  return (url: string) => new WebSocket(url, { origin }) as unknown as SocketLike;
}

function until<T>(items: T[], predicate: (item: T) => boolean): Promise<T> {
  return new Promise((resolve) => {
    const check = () => {
      const found = items.find(predicate);
      if (found !== undefined) resolve(found);
      else setTimeout(check, 10);
    };
    check();
  });
}

describe('socketUrlFor', () => {
  it('points at /ws on the page host and carries the page token', () => {
    expect(socketUrlFor('http://127.0.0.1:5177/?token=abc')).toBe('ws://127.0.0.1:5177/ws?token=abc');
    expect(socketUrlFor('https://gpu-box:8443/index.html?token=x%2By')).toBe('wss://gpu-box:8443/ws?token=x%2By');
    expect(socketUrlFor('http://127.0.0.1:5177/')).toBe('ws://127.0.0.1:5177/ws');
  });
});

describe.skipIf(skipReason !== null)('WebSocketTransport', () => {
  it('connects, greets, and receives the engine status', async () => {
    const origin = `http://127.0.0.1:${host.port}`;
    const transport = new WebSocketTransport(socketUrlFor(host.url), browserLikeSocket(origin));
    const events: EngineEvent[] = [];
    const states: ConnectionInfo[] = [];
    transport.onEvent((e) => events.push(e));
    transport.onConnection((c) => states.push(c));
    transport.connect();
    const status = await until(events, (e) => e.type === 'status');
    expect(status).toMatchObject({ type: 'status', bundledModels: [{ name: 'echo-draft' }, { name: 'echo-target' }] });
    expect(states.map((s) => s.state)).toEqual(['connecting', 'connected']);

    expect(() => transport.send({ type: 'trace.seek', step: -1 } as never)).toThrow(/invalid request/);
    transport.send({ type: 'run.pause' });
    const error = await until(events, (e) => e.type === 'error');
    expect(error).toMatchObject({ message: 'run.pause failed: no run is in progress to pause' }); // answered by the engine host
    transport.close();
  });

  it('reports a refused link as disconnected with a hint, and keeps retrying', async () => {
    const transport = new WebSocketTransport(socketUrlFor(host.url), browserLikeSocket('http://evil.example'));
    const states: ConnectionInfo[] = [];
    transport.onConnection((c) => states.push(c));
    transport.connect();
    const down = await until(states, (s) => s.state === 'disconnected');
    expect(down.detail).toContain('token URL');
    await until(states, (s) => s.detail?.startsWith('reconnecting') ?? false);
    transport.close();
    expect(() => transport.send({ type: 'hello' })).toThrow('not connected to the engine host');
  });
});
