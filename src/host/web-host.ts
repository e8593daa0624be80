// The web host: starts the engine host as a child process and serves the renderer build over
// HTTP, with the message contract over a WebSocket, so the studio runs in any browser. Its pieces,
// by concern: who may use it (web-auth.ts), the renderer's files (web-static.ts), the trace routes
// (web-trace-routes.ts), the engine host child and its restarts (web-engine.ts); this file wires
// them to one HTTP server and its WebSocket clients.
// It can read model folders and write files on this machine, so no other web page may drive it:
// it binds to loopback unless told otherwise, requires the per-launch token on every HTTP and
// WebSocket request, checks the Host header (DNS rebinding) and the WebSocket Origin, and caps
// message sizes.
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { decodeText, encodeMessage, MAX_MESSAGE_BYTES, OBSERVER_REQUESTS, parseRequest, TRACE_DOWNLOAD_ROUTE, TRACE_UPLOAD_ROUTE, type EngineEvent } from '../shared/messages.js';
import { isLoopbackAddress, newAccessToken } from './security.js';
import { TraceFileRefusal } from './web-trace-files.js';
import { resolveDataDir } from './data-folder.js';
import { webAuth, type Access, type WebAuth } from './web-auth.js';
import { startEngineChild, WEB_HOST_CLIENT, type EngineChild } from './web-engine.js';
import { refuse, serveRendererFile } from './web-static.js';
import { traceRoutes, type TraceRoutes } from './web-trace-routes.js';

export interface WebHostOptions {
  /** Port to listen on; 0 picks a free one. */
  port: number;
  /** Address to bind; loopback unless the user passed an explicit --host. */
  host?: string;
  rendererDir: string;
  engineHostEntry: string;
  /** Passed to the engine host (default: the package's assets/models). */
  modelsDir?: string;
  /** A trace the engine host opens as soon as it starts (and again after a restart): `trace replay`. */
  openTrace?: string;
  /**
   * The studio's data folder: clients read and write there, and relative paths start there
   * (default: the per-user data folder, made when missing; see data-folder.ts).
   */
  dataDir?: string;
  /** More folders clients may read and write (model folders, prompts, profiles): `serve --allow`. */
  allow?: string[];
  /** Largest trace a browser may upload, in bytes (default MAX_TRACE_UPLOAD_BYTES). */
  maxUploadBytes?: number;
  /** Fixed token (tests); a random one per launch otherwise. */
  token?: string;
  /** Fixed token of the observer link (tests); a random one per launch otherwise. */
  observerToken?: string;
  log?: (line: string) => void;
}

export interface WebHost {
  /** The URL to open, token included. */
  url: string;
  port: number;
  token: string;
  /** The observer link: everything the studio shows, read-only (its own token). */
  observerUrl: string;
  observerToken: string;
  /** Process id of the current engine host child (it changes when the host restarts it). */
  enginePid(): number | undefined;
  close(): Promise<void>;
}

/** A client this far behind is sent no more frames until it catches up (it would only lag). */
const MAX_CLIENT_BACKLOG_BYTES = 64 * 1024 * 1024;

/** The status event as one client sees it: with what its link may do. */
function statusFor(event: EngineEvent, access: Access): EngineEvent {
  return event.type === 'status' ? { ...event, access } : event;
}

/**
 * The folders of one launch: the data folder and --allow folders, which must exist, and a session
 * folder of its own for uploads and downloads (removed at close); the engine host may use them all.
 */
function launchFolders(options: WebHostOptions): { sessionDir: string; uploadsDir: string; downloadsDir: string; engineArgs: string[] } {
  // What a browser client may read and write: the data folder, the models folder (the engine host
  // adds it), the folders named with --allow and a replayed trace's folder. Nothing else.
  const dataDir = path.resolve(options.dataDir ?? resolveDataDir(undefined, {}));
  const allowed = [...(options.allow ?? []).map((dir) => path.resolve(dir)), ...(options.openTrace ? [path.dirname(path.resolve(options.openTrace))] : [])];
  for (const [flag, dir] of [['the data folder', dataDir], ...allowed.map((d) => ['--allow', d])] as const) {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new Error(`${flag} ${dir}: no such folder`);
  }
  // This server's own folder for traces a browser uploads and exports it downloads: private to
  // this launch, removed at close.
  const sessionDir = mkdtempSync(path.join(tmpdir(), 'echo-studio-web-'));
  const uploadsDir = path.join(sessionDir, 'uploads');
  const downloadsDir = path.join(sessionDir, 'downloads');
  mkdirSync(uploadsDir);
  mkdirSync(downloadsDir);
  const engineArgs = [...(options.modelsDir ? ['--models-dir', options.modelsDir] : []), '--data-dir', dataDir, ...[...allowed, sessionDir].flatMap((dir) => ['--allow', dir])];
  return { sessionDir, uploadsDir, downloadsDir, engineArgs };
}

/** The browser clients: open sockets by the id their requests carry to the engine host, and what each may do. */
class Clients {
  readonly sockets = new Map<number, WebSocket>();
  readonly access = new WeakMap<WebSocket, Access>();
  private nextId = 1;

  newId(): number {
    return this.nextId++;
  }

  send(ws: WebSocket, event: EngineEvent): void {
    ws.send(encodeMessage(statusFor(event, this.access.get(ws) ?? 'observe')));
  }

  broadcast(event: EngineEvent): void {
    // Encoded once for everyone, but a status tells each link what it may do.
    const text = event.type === 'status' ? null : encodeMessage(event);
    for (const ws of this.sockets.values()) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      if (event.type === 'frame' && ws.bufferedAmount > MAX_CLIENT_BACKLOG_BYTES) continue;
      if (text === null) this.send(ws, event);
      else ws.send(text);
    }
  }
}

/** Every HTTP request: admitted (auth), then the trace routes or the renderer's files. */
function httpHandler(auth: WebAuth, traces: TraceRoutes, rendererDir: string, log: (line: string) => void) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://placeholder');
    const admitted = auth.admit(req, url);
    if ('refused' in admitted) {
      refuse(res, 403, `403 forbidden: ${admitted.refused}`);
      return;
    }
    const failed = (err: Error) => {
      if (err instanceof TraceFileRefusal) {
        // A refused upload may still be sending: answer, then stop reading it.
        if (!res.headersSent) refuse(res, err.status, err.message);
        return;
      }
      log(`serving ${url.pathname} failed: ${err.message}`);
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.destroy();
    };
    if (url.pathname === TRACE_UPLOAD_ROUTE) {
      if (admitted.access === 'observe') refuse(res, 403, 'an observer link may watch, not open traces');
      else if (req.method !== 'POST') refuse(res, 405, 'upload a trace with POST');
      else traces.upload(req, res, url).catch(failed);
      return;
    }
    if (url.pathname === TRACE_DOWNLOAD_ROUTE) {
      if (req.method !== 'GET') refuse(res, 405, 'download a trace with GET');
      else traces.download(res, url).catch(failed);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      refuse(res, 405, 'only GET and HEAD are served');
      return;
    }
    const linkAccess = auth.accessOfToken(url.searchParams.get('token'));
    serveRendererFile(req, res, url, rendererDir, linkAccess === null ? null : auth.cookie(linkAccess)).catch(failed);
  };
}

function rejectUpgrade(socket: Duplex, status: number, message: string): void {
  const reason = status === 403 ? 'Forbidden' : 'Not Found';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(message)}\r\n\r\n${message}`);
}

/**
 * The WebSocket at /ws: admitted like a page (auth) and only from the page's own Origin; each
 * socket's requests are validated, an observer's limited to OBSERVER_REQUESTS, and sent on to the
 * engine host under the socket's client id.
 */
function acceptSockets(server: Server, wss: WebSocketServer, parts: { auth: WebAuth; clients: Clients; engine: EngineChild; lastStatus: () => EngineEvent | null; log: (line: string) => void }): void {
  const { auth, clients, engine, log } = parts;
  server.on('upgrade', (req, socket, head) => {
    // A refused client may reset the connection while we answer; that must not crash the host.
    socket.on('error', (err) => log(`upgrade socket: ${err.message}`));
    const url = new URL(req.url ?? '/', 'http://placeholder');
    if (url.pathname !== '/ws') {
      rejectUpgrade(socket, 404, 'not found');
      return;
    }
    const admitted = auth.admit(req, url);
    if ('refused' in admitted) {
      rejectUpgrade(socket, 403, admitted.refused);
      return;
    }
    // Browsers always send Origin on WebSocket requests; it must be this server's own page.
    const origin = req.headers.origin;
    if (origin !== `http://${req.headers.host ?? ''}`) {
      rejectUpgrade(socket, 403, `origin ${JSON.stringify(origin ?? null)} may not connect`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      clients.access.set(ws, admitted.access);
      wss.emit('connection', ws, req);
    });
  });

  wss.on('connection', (ws: WebSocket) => {
    const id = clients.newId();
    clients.sockets.set(id, ws);
    const observer = clients.access.get(ws) === 'observe';
    ws.on('close', () => {
      clients.sockets.delete(id);
      engine.send({ client: id, closed: true });
    });
    ws.on('error', (err) => log(`websocket: ${err.message}`));
    const status = parts.lastStatus();
    if (status) clients.send(ws, status);
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        clients.send(ws, { type: 'error', message: 'binary messages are not part of the protocol' });
        return;
      }
      const decoded = decodeText(data.toString());
      const parsed = decoded.ok ? parseRequest(decoded.value) : decoded;
      if (!parsed.ok) {
        clients.send(ws, { type: 'error', message: parsed.error });
        return;
      }
      if (observer && !OBSERVER_REQUESTS.has(parsed.value.type)) {
        clients.send(ws, { type: 'error', message: `${parsed.value.type} refused: this is an observer link, which watches the studio and cannot change it` });
        return;
      }
      if (!engine.send({ client: id, request: parsed.value })) clients.send(ws, { type: 'error', message: 'the engine host is not running' });
    });
  });
}

export async function startWebHost(options: WebHostOptions): Promise<WebHost> {
  const bindHost = options.host ?? '127.0.0.1';
  const loopbackOnly = isLoopbackAddress(bindHost);
  const token = options.token ?? newAccessToken();
  const observerToken = options.observerToken ?? newAccessToken();
  if (observerToken === token) throw new Error('the observer link needs a token of its own');
  const log = options.log ?? ((line: string) => process.stderr.write(`web host: ${line}\n`));
  let boundPort = 0;
  const auth = webAuth({ token, observerToken, loopbackOnly, port: () => boundPort });
  const folders = launchFolders(options);
  const clients = new Clients();
  let lastStatus: EngineEvent | null = null;
  let traces: TraceRoutes | null = null;

  const engine = startEngineChild({
    entry: options.engineHostEntry,
    args: folders.engineArgs,
    openTrace: options.openTrace,
    log,
    deliver(to, event) {
      if (event.type === 'status') lastStatus = event;
      if (to === 'all') {
        clients.broadcast(event);
      } else if (to === WEB_HOST_CLIENT) {
        // The web host's own requests: a restarted engine's status is news for everyone; errors
        // (a replayed trace that cannot be opened) belong in the log.
        if (event.type === 'status') clients.broadcast(event);
        else if (event.type === 'error') log(event.message);
      } else if (!traces?.deliver(to, event)) {
        const ws = clients.sockets.get(to);
        if (ws?.readyState === WebSocket.OPEN) clients.send(ws, event);
      }
    },
    onExit: () => traces?.engineGone(),
    announce: (message) => clients.broadcast({ type: 'error', message }),
  });
  traces = traceRoutes({ uploadsDir: folders.uploadsDir, downloadsDir: folders.downloadsDir, maxUploadBytes: options.maxUploadBytes, newClientId: () => clients.newId(), toEngine: engine.send });

  const server: Server = createServer(httpHandler(auth, traces, path.resolve(options.rendererDir), log));
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  acceptSockets(server, wss, { auth, clients, engine, lastStatus: () => lastStatus, log });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, bindHost, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: NodeJS.ErrnoException) => {
    void engine.stop();
    rmSync(folders.sessionDir, { recursive: true, force: true });
    if (err.code === 'EADDRINUSE') throw new Error(`port ${options.port} on ${bindHost} is already in use; pick another with --port`);
    throw err;
  });
  boundPort = (server.address() as AddressInfo).port;
  if (!loopbackOnly) log(`listening on ${bindHost}: anyone who can reach this address and has the token can use the engine`);

  const urlHost = loopbackOnly ? '127.0.0.1' : bindHost.includes(':') ? `[${bindHost}]` : bindHost;
  return {
    url: `http://${urlHost}:${boundPort}/?token=${token}`,
    port: boundPort,
    token,
    observerUrl: `http://${urlHost}:${boundPort}/?token=${observerToken}`,
    observerToken,
    enginePid: () => engine.pid(),
    async close() {
      for (const ws of clients.sockets.values()) ws.terminate();
      wss.close();
      await engine.stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(folders.sessionDir, { recursive: true, force: true });
    },
  };
}
