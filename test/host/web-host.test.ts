import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { bundledDomains } from '../../src/engine/run/session-run.js';
import { packageVersion } from '../../src/host/paths.js';
import { POLICY_NAMES } from '../../src/shared/config.js';
import { startWebHost, type WebHost } from '../../src/host/web-host.js';
import { MAX_MESSAGE_BYTES, parseEvent, type EngineEvent } from '../../src/shared/messages.js';
import { TraceRecorder } from '../../src/engine/trace/writer.js';
import { testHeader, testRun } from '../engine/trace/fixtures.js';
import { missingBuild, paths, repoRoot, writeModelsFolder } from './helpers.js';

const skipReason = missingBuild();
if (skipReason) console.warn(`skipping web host tests: ${skipReason}`);

let host: WebHost;
let scratch: string;
let tracePath: string;

beforeAll(async () => {
  if (skipReason) return;
  scratch = await mkdtemp(path.join(tmpdir(), 'echo-web-'));
  const rendererDir = path.join(scratch, 'renderer');
  await mkdir(path.join(rendererDir, 'assets'), { recursive: true });
  await writeFile(path.join(rendererDir, 'index.html'), '<!doctype html><title>studio</title>');
  await writeFile(path.join(rendererDir, 'assets', 'app.js'), 'console.log(1)');
  await writeFile(path.join(scratch, 'secret.txt'), 'outside the renderer');
  await writeModelsFolder(path.join(scratch, 'models'));
  tracePath = path.join(scratch, 'run.jsonl');
  const recorder = new TraceRecorder(tracePath, testHeader());
  for (const step of testRun()) recorder.step(step);
  recorder.finish('finished');
  host = await startWebHost({
    port: 0,
    rendererDir,
    engineHostEntry: paths.engineHostEntry,
    modelsDir: path.join(scratch, 'models'),
    dataDir: scratch,
    log: () => {},
  });
});

afterAll(async () => {
  if (skipReason) return;
  await host.close();
  await rm(scratch, { recursive: true, force: true });
});

/** A raw HTTP GET, so tests control the path and headers byte for byte. */
function get(pathAndQuery: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: host.port, path: pathAndQuery, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a WebSocket; resolves with it when open, or with the HTTP status that refused it. */
function openSocket(query: string, origin: string | undefined): Promise<{ ws: WebSocket } | { refused: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${host.port}/ws${query}`, origin ? { origin } : {});
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ refused: res.statusCode ?? 0 });
      ws.terminate();
    });
    ws.once('error', (err) => {
      if (!String(err.message).includes('Unexpected server response')) reject(err);
    });
  });
}

function nextEvent(ws: WebSocket, type: EngineEvent['type']): Promise<EngineEvent> {
  return nextMatching(ws, (event) => event.type === type);
}

/** The next event on `ws` that `matches`. */
function nextMatching(ws: WebSocket, matches: (event: EngineEvent) => boolean): Promise<EngineEvent> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData) => {
      const parsed = parseEvent(JSON.parse(data.toString()));
      if (parsed.ok && matches(parsed.value)) {
        ws.off('message', onMessage);
        resolve(parsed.value);
      }
    };
    ws.on('message', onMessage);
  });
}

/** The last progress of opening or replaying a trace: the bar full, whether it finished, was cancelled or failed. */
const traceTaskEnded = (event: EngineEvent) => event.type === 'progress' && event.task === 'trace' && event.done >= event.total;

/**
 * Asks the engine host over `controller` to cancel any trace open or replay under way (`trace.cancel`
 * is refused when there is none) and resolves once there is none, and once every event that task
 * sent has reached `watcher`: the task's last progress, then a hello answered after its run state.
 * Resolves with whether a task was under way.
 */
async function settleTraceTask(controller: WebSocket, watcher: WebSocket): Promise<boolean> {
  const ended = nextMatching(watcher, traceTaskEnded).then(() => true);
  const refused = nextMatching(controller, (e) => e.type === 'error' && e.message.includes('nothing to cancel')).then(() => false);
  controller.send(JSON.stringify({ type: 'trace.cancel' }));
  const wasBusy = await Promise.race([ended, refused]);
  // The engine host sends a stopped task's run state right after its last progress, and answers a
  // later hello after both.
  const answered = nextEvent(watcher, 'status');
  watcher.send(JSON.stringify({ type: 'hello' }));
  await answered;
  return wasBusy;
}

const ownOrigin = () => `http://127.0.0.1:${host.port}`;

/** A socket as the studio page opens it (token, own origin), once open. */
async function studioSocket(): Promise<WebSocket> {
  const opened = await openSocket(`?token=${host.token}`, ownOrigin());
  if (!('ws' in opened)) throw new Error(`refused with ${opened.refused}`);
  return opened.ws;
}

describe.skipIf(skipReason !== null)('web host', () => {
  it('prints a loopback URL with the token', () => {
    expect(host.url).toBe(`http://127.0.0.1:${host.port}/?token=${host.token}`);
    expect(host.token.length).toBeGreaterThanOrEqual(32);
  });

  it('refuses HTTP requests without the right token', async () => {
    const none = await get('/');
    expect(none.status).toBe(403);
    expect(none.body).toContain('access token');
    expect((await get('/?token=wrong')).status).toBe(403);
    expect((await get('/assets/app.js')).status).toBe(403);
  });

  it('serves the page with the token, sets a strict cookie, then serves assets by cookie', async () => {
    const page = await get(`/?token=${host.token}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<title>studio</title>');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    const cookie = String(page.headers['set-cookie']);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    const asset = await get('/assets/app.js', { cookie: cookie.split(';')[0] });
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toContain('text/javascript');
  });

  it('refuses foreign Host headers (DNS rebinding) and paths outside the renderer', async () => {
    expect((await get(`/?token=${host.token}`, { host: 'evil.example:80' })).status).toBe(403);
    const traversal = await get(`/%2e%2e/secret.txt?token=${host.token}`);
    expect(traversal.status).toBe(404);
    expect(traversal.body).not.toContain('outside the renderer');
  });

  it('refuses a WebSocket without the token or from another origin', async () => {
    expect(await openSocket('', ownOrigin())).toEqual({ refused: 403 });
    expect(await openSocket(`?token=${host.token}`, 'http://evil.example')).toEqual({ refused: 403 });
    expect(await openSocket(`?token=${host.token}`, undefined)).toEqual({ refused: 403 });
  });

  it('survives clients that reset the connection while being refused', async () => {
    for (let i = 0; i < 20; i++) {
      await new Promise<void>((resolve) => {
        const socket = connect(host.port, '127.0.0.1', () => {
          socket.write(`GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${host.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
          socket.resetAndDestroy();
          resolve();
        });
        socket.on('error', () => {});
      });
    }
    expect((await get(`/?token=${host.token}`)).status).toBe(200);
  });

  it('relays hello to the live engine host and its status back', async () => {
    const opened = await openSocket(`?token=${host.token}`, ownOrigin());
    if (!('ws' in opened)) throw new Error(`refused with ${opened.refused}`);
    const { ws } = opened;
    const status = nextEvent(ws, 'status');
    ws.send(JSON.stringify({ type: 'hello' }));
    expect(await status).toEqual({
      type: 'status',
      version: packageVersion(repoRoot),
      bundledModels: [
        { name: 'echo-draft', dir: path.join(scratch, 'models', 'echo-draft'), parameters: 1000 * 64 + 64 },
        { name: 'echo-target', dir: path.join(scratch, 'models', 'echo-target'), parameters: 2 * 4000 * 256 },
      ],
      provider: 'cpu',
      draftPrecision: 'int8',
      domains: bundledDomains(),
      // The engine host's program registers no policy of its own: the built-in ones.
      policies: [...POLICY_NAMES],
      runState: 'idle',
      // The web host says what this link may do: the printed URL's token controls the studio.
      access: 'control',
    });
    const invalid = nextEvent(ws, 'error');
    ws.send(JSON.stringify({ type: 'trace.export', path: '/tmp/x', format: 'xml' }));
    expect(await invalid).toMatchObject({ message: expect.stringContaining('invalid request (type trace.export)') });
    ws.close();
  });

  it('answers each request only to the client that sent it, and broadcasts run events to all', async () => {
    const asker = await studioSocket();
    const watcher = await studioSocket();
    const watcherSaw: EngineEvent[] = [];
    watcher.on('message', (data) => {
      const parsed = parseEvent(JSON.parse(data.toString()));
      if (parsed.ok) watcherSaw.push(parsed.value);
    });
    // An error answer (a folder that is no model), a request the engine refuses, an invalid one.
    const refused = nextEvent(asker, 'error');
    asker.send(JSON.stringify({ type: 'model.open', dir: path.join(scratch, 'no-such-model') }));
    await refused;
    const stopRefused = nextEvent(asker, 'error');
    asker.send(JSON.stringify({ type: 'run.stop' }));
    expect(await stopRefused).toMatchObject({ message: expect.stringContaining('no run is in progress') });
    // The engine answers in order: once the watcher's own hello is answered, any leak would be here.
    const status = nextEvent(watcher, 'status');
    watcher.send(JSON.stringify({ type: 'hello' }));
    await status;
    expect(watcherSaw.filter((e) => e.type === 'error' || e.type === 'progress')).toEqual([]);

    // A replay is the studio's shared picture: every client sees its frames and run state.
    const replayed = nextEvent(watcher, 'run.state');
    const frame = nextEvent(watcher, 'frame');
    asker.send(JSON.stringify({ type: 'trace.open', path: tracePath }));
    expect(await replayed).toEqual({ type: 'run.state', state: 'finished' });
    expect((await frame).type).toBe('frame');
    asker.close();
    watcher.close();
  });

  it('offers an observer link of its own: it sees every broadcast and may send only hello', async () => {
    expect(host.observerToken).not.toBe(host.token);
    expect(host.observerUrl).toBe(`http://127.0.0.1:${host.port}/?token=${host.observerToken}`);
    // The page loads with the observer token and remembers it in a cookie of its own.
    const page = await get(`/?token=${host.observerToken}`);
    expect(page.status).toBe(200);
    expect(String(page.headers['set-cookie'])).toMatch(new RegExp(`^echo_studio_observer_${host.port}=${host.observerToken}; Path=/; HttpOnly; SameSite=Strict`));
    // It may not upload a trace (which the studio would open for everyone).
    const upload = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: host.port, method: 'POST', path: `/trace/upload?name=a.jsonl&token=${host.observerToken}`, headers: { origin: ownOrigin() } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end('{}');
    });
    expect(upload).toBe(403);

    const controller = await studioSocket();
    const opened = await openSocket(`?token=${host.observerToken}`, ownOrigin());
    if (!('ws' in opened)) throw new Error(`refused with ${opened.refused}`);
    const observer = opened.ws;
    const observerSaw: EngineEvent[] = [];
    observer.on('message', (data) => {
      const parsed = parseEvent(JSON.parse(data.toString()));
      if (parsed.ok) observerSaw.push(parsed.value);
    });
    // Each link's status says what it may do.
    const observerStatus = nextEvent(observer, 'status');
    observer.send(JSON.stringify({ type: 'hello' }));
    expect(await observerStatus).toMatchObject({ type: 'status', access: 'observe' });
    const controllerStatus = nextEvent(controller, 'status');
    controller.send(JSON.stringify({ type: 'hello' }));
    expect(await controllerStatus).toMatchObject({ type: 'status', access: 'control' });

    // A trace an earlier test left open is opened again for these hellos (the studio's picture
    // comes back for a new client): stop that, and start from an engine host with no trace task.
    await settleTraceTask(controller, observer);
    observerSaw.length = 0;

    // Control messages from the observer: refused in one line each, never passed to the engine.
    for (const request of [{ type: 'run.stop' }, { type: 'run.pause' }, { type: 'knobs.set', knobs: { kmax: 8 } }, { type: 'trace.open', path: tracePath }, { type: 'trace.cancel' }]) {
      const refused = nextEvent(observer, 'error');
      observer.send(JSON.stringify(request));
      const error = await refused;
      expect(error).toEqual({ type: 'error', message: `${request.type} refused: this is an observer link, which watches the studio and cannot change it` });
    }
    // Had any reached the engine host, it would show: the trace.open would be a trace task under
    // way, which the controller's trace.cancel (after it on the same channel) would stop rather
    // than be refused; the others would be answered with errors of the engine host's own.
    expect(await settleTraceTask(controller, observer)).toBe(false);
    // (Frames it may see: a hello's catch-up to the trace the earlier test opened, sent to it alone.)
    expect(observerSaw.filter((e) => e.type === 'run.state' || e.type === 'progress')).toEqual([]);
    expect(observerSaw.filter((e) => e.type === 'error' && !e.message.includes('refused: this is an observer link'))).toEqual([]);

    // What the controlling link does, the observer sees.
    const replayed = nextEvent(observer, 'run.state');
    const frame = nextEvent(observer, 'frame');
    controller.send(JSON.stringify({ type: 'trace.open', path: tracePath }));
    expect(await replayed).toEqual({ type: 'run.state', state: 'finished' });
    expect((await frame).type).toBe('frame');
    controller.close();
    observer.close();
  });

  it('closes a socket that sends more than the size cap', async () => {
    const opened = await openSocket(`?token=${host.token}`, ownOrigin());
    if (!('ws' in opened)) throw new Error(`refused with ${opened.refused}`);
    const closed = new Promise<number>((resolve) => opened.ws.once('close', (code) => resolve(code)));
    opened.ws.send('x'.repeat(MAX_MESSAGE_BYTES + 1));
    expect(await closed).toBe(1009);
  });
});
