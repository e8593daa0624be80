// The web host: starts the engine host as a child process and serves the renderer build over
// HTTP, with the message contract over a WebSocket, so the studio runs in any browser.
// It can read model folders and write files on this machine, so no other web page may drive it:
// it binds to loopback unless told otherwise, requires the per-launch token on every HTTP and
// WebSocket request, checks the Host header (DNS rebinding) and the WebSocket Origin, and caps
// message sizes.
import { fork, type ChildProcess } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import {
  decodeText,
  DOWNLOAD_FORMATS,
  DOWNLOAD_NAMES,
  encodeMessage,
  MAX_MESSAGE_BYTES,
  parseEvent,
  parseRequest,
  OBSERVER_REQUESTS,
  TRACE_DOWNLOAD_ROUTE,
  TRACE_UPLOAD_ROUTE,
  type DownloadFormat,
  type EngineEvent,
  type EngineRequest,
  type TraceUploadAnswer,
} from '../shared/messages.js';
import type { ChannelFromEngine, ChannelToEngine } from './port.js';
import { CONTENT_SECURITY_POLICY, hostnameOf, isLoopbackAddress, newAccessToken, tokenMatches } from './security.js';
import { isDownloadFormat, MAX_TRACE_UPLOAD_BYTES, receiveUpload as receiveTraceFile, TraceFileRefusal, uploadName } from './web-trace-files.js';
import { removeQuietly } from '../engine/index.js';
import { resolveDataDir } from './data-folder.js';

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

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** Engine host restarts allowed after unexpected exits before the web host gives up on it. */
const MAX_ENGINE_RESTARTS = 3;
/** A client this far behind is sent no more frames until it catches up (it would only lag). */
const MAX_CLIENT_BACKLOG_BYTES = 64 * 1024 * 1024;
/** How long a download waits for the engine host's export. */
const EXPORT_TIMEOUT_MS = 120_000;

/**
 * What a link may do: the controlling link steers the studio; an observer link sees every broadcast
 * and may send only OBSERVER_REQUESTS (a room watching one projected run, a colleague looking at a
 * shared machine's run).
 */
type Access = 'control' | 'observe';

/** The status event as one client sees it: with what its link may do. */
function statusFor(event: EngineEvent, access: Access): EngineEvent {
  return event.type === 'status' ? { ...event, access } : event;
}

const DOWNLOAD_TYPES: Record<DownloadFormat, string> = {
  jsonl: 'application/x-ndjson; charset=utf-8',
  perfetto: 'application/json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

/** A frame as the engine host sends it: an object of type 'frame' with its steps in an array. */
function isFrameEnvelope(event: unknown): boolean {
  return typeof event === 'object' && event !== null && (event as { type?: unknown }).type === 'frame' && Array.isArray((event as { steps?: unknown }).steps);
}

export async function startWebHost(options: WebHostOptions): Promise<WebHost> {
  const bindHost = options.host ?? '127.0.0.1';
  const loopbackOnly = isLoopbackAddress(bindHost);
  const token = options.token ?? newAccessToken();
  const observerToken = options.observerToken ?? newAccessToken();
  if (observerToken === token) throw new Error('the observer link needs a token of its own');
  const log = options.log ?? ((line: string) => process.stderr.write(`web host: ${line}\n`));
  const rendererDir = path.resolve(options.rendererDir);
  const cookieNames: Record<Access, () => string> = {
    control: () => `echo_studio_token_${boundPort}`,
    observe: () => `echo_studio_observer_${boundPort}`,
  };
  let boundPort = 0;
  let closing = false;

  // ---- engine host child ------------------------------------------------------------------
  /** Open sockets by the id their requests carry to the engine host (0 is the web host itself). */
  const clients = new Map<number, WebSocket>();
  /** What each open socket's link may do. */
  const access = new WeakMap<WebSocket, Access>();
  const send = (ws: WebSocket, event: EngineEvent) => ws.send(encodeMessage(statusFor(event, access.get(ws) ?? 'observe')));
  const SELF = 0;
  let nextClientId = 1;
  let engine: ChildProcess | null = null;
  let restarts = 0;
  let lastStatus: EngineEvent | null = null;

  const broadcast = (event: EngineEvent) => {
    // Encoded once for everyone, but a status tells each link what it may do.
    const text = event.type === 'status' ? null : encodeMessage(event);
    for (const ws of clients.values()) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      if (event.type === 'frame' && ws.bufferedAmount > MAX_CLIENT_BACKLOG_BYTES) continue;
      if (text === null) send(ws, event);
      else ws.send(text);
    }
  };

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
  const engineArgs = [
    ...(options.modelsDir ? ['--models-dir', options.modelsDir] : []),
    '--data-dir',
    dataDir,
    ...[...allowed, sessionDir].flatMap((dir) => ['--allow', dir]),
  ];
  /** Exports under way for downloads, by the client id their trace.export was sent as. */
  const pendingExports = new Map<number, (event: EngineEvent) => void>();
  let uploads = 0;

  const startEngine = () => {
    const args = engineArgs;
    const child = fork(options.engineHostEntry, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    engine = child;
    // Clients that connect later get the replay with their hello.
    if (options.openTrace) sendAs(SELF, { type: 'trace.open', path: options.openTrace });
    child.on('message', (data: unknown) => {
      const envelope = data as Partial<ChannelFromEngine> | null;
      const to = envelope?.to;
      // Frames are passed on as they came: the engine host is this server's own child, and each
      // browser's transport validates every event it receives. Checking a long replay's frames
      // here too would spend this process's time (and other clients' answers) on them twice.
      const frame = isFrameEnvelope(envelope?.event);
      const parsed = frame ? null : parseEvent(envelope?.event);
      if ((parsed !== null && !parsed.ok) || (to !== 'all' && typeof to !== 'number')) {
        log(`dropped a malformed message from the engine host: ${parsed !== null && !parsed.ok ? parsed.error : 'no addressee'}`);
        return;
      }
      const event = parsed === null ? (envelope!.event as EngineEvent) : parsed.value;
      if (event.type === 'status') lastStatus = event;
      if (to === 'all') {
        broadcast(event);
      } else if (to === SELF) {
        // The web host's own requests: a restarted engine's status is news for everyone; errors
        // (a replayed trace that cannot be opened) belong in the log.
        if (event.type === 'status') broadcast(event);
        else if (event.type === 'error') log(event.message);
      } else if (pendingExports.has(to)) {
        pendingExports.get(to)!(event);
      } else {
        const ws = clients.get(to);
        if (ws?.readyState === WebSocket.OPEN) send(ws, event);
      }
    });
    child.on('error', (err) => log(`engine host: ${err.message}`));
    child.on('exit', (code, signal) => {
      if (engine === child) engine = null;
      for (const settle of [...pendingExports.values()]) settle({ type: 'error', message: 'the engine host stopped during the export' });
      if (closing) return;
      const why = signal ? `signal ${signal}` : `exit code ${code}`;
      if (restarts < MAX_ENGINE_RESTARTS) {
        restarts += 1;
        broadcast({ type: 'error', message: `the engine host stopped (${why}); restarting it (${restarts}/${MAX_ENGINE_RESTARTS})` });
        startEngine();
        sendAs(SELF, { type: 'hello' });
      } else {
        broadcast({ type: 'error', message: `the engine host stopped (${why}) and was restarted too often; restart echo-studio serve` });
      }
    });
  };

  /** Sends one message on the engine host's channel; false when the engine host is not there. */
  const toEngine = (message: ChannelToEngine): boolean => {
    if (!engine || !engine.connected) return false;
    engine.send(message);
    return true;
  };
  function sendAs(client: number, request: EngineRequest): void {
    toEngine({ client, request });
  }

  const sendToEngine = (request: EngineRequest, client: number, replyTo: WebSocket) => {
    if (!toEngine({ client, request })) send(replyTo, { type: 'error', message: 'the engine host is not running' });
  };

  // ---- access checks ----------------------------------------------------------------------
  const accessOfToken = (presented: string | null): Access | null =>
    tokenMatches(presented, token) ? 'control' : tokenMatches(presented, observerToken) ? 'observe' : null;
  /** What the request's token (in the URL, else in a cookie an earlier page load set) lets it do. */
  const accessOf = (req: IncomingMessage, url: URL): Access | null => {
    const fromQuery = url.searchParams.get('token');
    if (fromQuery !== null) return accessOfToken(fromQuery);
    const cookies = new Map<string, string>();
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const [name, ...rest] = part.trim().split('=');
      cookies.set(name, rest.join('='));
    }
    if (tokenMatches(cookies.get(cookieNames.control()), token)) return 'control';
    if (tokenMatches(cookies.get(cookieNames.observe()), observerToken)) return 'observe';
    return null;
  };

  /** Why a request is refused, or what its link may do. */
  const admit = (req: IncomingMessage, url: URL): { refused: string } | { access: Access } => {
    const hostHeader = req.headers.host ?? '';
    if (loopbackOnly && !isLoopbackAddress(hostnameOf(hostHeader))) {
      return { refused: `host ${JSON.stringify(hostHeader)} is not this loopback server` };
    }
    const granted = accessOf(req, url);
    if (granted === null) return { refused: 'missing or wrong access token: open the full URL printed when echo-studio serve started' };
    return { access: granted };
  };

  const requestUrl = (req: IncomingMessage) => new URL(req.url ?? '/', 'http://placeholder');

  // ---- HTTP -------------------------------------------------------------------------------
  const refuse = (res: ServerResponse, status: number, message: string) => {
    res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(`${message}\n`);
  };

  const serveFile = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    let relative: string;
    try {
      relative = decodeURIComponent(url.pathname);
    } catch {
      refuse(res, 400, 'bad path');
      return;
    }
    if (relative === '/' || relative === '') relative = '/index.html';
    const file = path.resolve(rendererDir, '.' + relative);
    if (file !== rendererDir && !file.startsWith(rendererDir + path.sep)) {
      refuse(res, 404, 'not found');
      return;
    }
    let info;
    try {
      info = await stat(file);
    } catch {
      if (relative === '/index.html') {
        refuse(res, 503, 'the renderer is not built: run `npm run build` first');
      } else {
        refuse(res, 404, 'not found');
      }
      return;
    }
    if (!info.isFile()) {
      refuse(res, 404, 'not found');
      return;
    }
    const headers: Record<string, string> = {
      'Content-Type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream',
      'Content-Length': String(info.size),
      'Content-Security-Policy': `${CONTENT_SECURITY_POLICY}; frame-ancestors 'none'`,
      'X-Content-Type-Options': 'nosniff',
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cache-Control': 'no-store',
    };
    // The page's own requests (scripts, styles) carry no token in the URL: hand it over as a
    // strict same-site cookie once the token-bearing URL has been opened.
    const linkAccess = accessOfToken(url.searchParams.get('token'));
    if (linkAccess !== null) {
      headers['Set-Cookie'] = `${cookieNames[linkAccess]()}=${linkAccess === 'control' ? token : observerToken}; Path=/; HttpOnly; SameSite=Strict`;
    }
    res.writeHead(200, headers);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file).pipe(res);
  };

  // ---- trace files (web-trace-files.ts) ---------------------------------------------------
  /** An upload: checked whole, kept in the session folder, answered with the path to trace.open. */
  const receiveUpload = async (req: IncomingMessage, res: ServerResponse, url: URL) => {
    // Only this server's own page may post (the token cookie is same-site already; this says so twice).
    if (req.headers.origin !== `http://${req.headers.host ?? ''}`) throw new TraceFileRefusal(403, `origin ${JSON.stringify(req.headers.origin ?? null)} may not upload`);
    const name = uploadName(url.searchParams.get('name'));
    uploads += 1;
    const { file, steps } = await receiveTraceFile(req, { folder: uploadsDir, serial: uploads, name, limit: options.maxUploadBytes ?? MAX_TRACE_UPLOAD_BYTES });
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(JSON.stringify({ path: file, name, steps } satisfies TraceUploadAnswer));
  };

  /** The engine host's trace.export of what the studio shows, into the session folder; resolves with the file. */
  const exportForDownload = (format: DownloadFormat): Promise<string> =>
    new Promise((resolve, reject) => {
      const id = nextClientId++;
      const file = path.join(downloadsDir, `${id}-${DOWNLOAD_NAMES[format]}`);
      const settle = (err: Error | null) => {
        clearTimeout(timer);
        pendingExports.delete(id);
        toEngine({ client: id, closed: true });
        if (err) {
          removeQuietly(file);
          reject(err);
        } else resolve(file);
      };
      const timer = setTimeout(() => settle(new TraceFileRefusal(504, 'the engine host did not finish the export in time')), EXPORT_TIMEOUT_MS);
      pendingExports.set(id, (event) => {
        if (event.type === 'progress' && event.task === 'export') settle(null);
        else if (event.type === 'error') settle(new TraceFileRefusal(409, event.message));
      });
      if (!toEngine({ client: id, request: { type: 'trace.export', path: file, format } })) settle(new TraceFileRefusal(503, 'the engine host is not running'));
    });

  const sendDownload = async (res: ServerResponse, url: URL) => {
    const format = url.searchParams.get('format') ?? 'jsonl';
    if (!isDownloadFormat(format)) throw new TraceFileRefusal(400, `format ${JSON.stringify(format)} cannot be downloaded: choose ${DOWNLOAD_FORMATS.join(', ')}`);
    const file = await exportForDownload(format);
    const size = (await stat(file)).size;
    res.writeHead(200, {
      'Content-Type': DOWNLOAD_TYPES[format],
      'Content-Length': String(size),
      'Content-Disposition': `attachment; filename="${DOWNLOAD_NAMES[format]}"`,
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
    });
    const stream = createReadStream(file);
    res.on('close', () => {
      stream.destroy();
      removeQuietly(file);
    });
    stream.pipe(res);
  };

  const server: Server = createServer((req, res) => {
    const url = requestUrl(req);
    const admitted = admit(req, url);
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
      else receiveUpload(req, res, url).catch(failed);
      return;
    }
    if (url.pathname === TRACE_DOWNLOAD_ROUTE) {
      if (req.method !== 'GET') refuse(res, 405, 'download a trace with GET');
      else sendDownload(res, url).catch(failed);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      refuse(res, 405, 'only GET and HEAD are served');
      return;
    }
    serveFile(req, res, url).catch(failed);
  });

  // ---- WebSocket --------------------------------------------------------------------------
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });

  const rejectUpgrade = (socket: Duplex, status: number, message: string) => {
    const reason = status === 403 ? 'Forbidden' : 'Not Found';
    socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(message)}\r\n\r\n${message}`);
  };

  server.on('upgrade', (req, socket, head) => {
    // A refused client may reset the connection while we answer; that must not crash the host.
    socket.on('error', (err) => log(`upgrade socket: ${err.message}`));
    const url = requestUrl(req);
    if (url.pathname !== '/ws') {
      rejectUpgrade(socket, 404, 'not found');
      return;
    }
    const admitted = admit(req, url);
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
      access.set(ws, admitted.access);
      wss.emit('connection', ws, req);
    });
  });

  wss.on('connection', (ws: WebSocket) => {
    const id = nextClientId++;
    clients.set(id, ws);
    const observer = access.get(ws) === 'observe';
    ws.on('close', () => {
      clients.delete(id);
      toEngine({ client: id, closed: true });
    });
    ws.on('error', (err) => log(`websocket: ${err.message}`));
    if (lastStatus) send(ws, lastStatus);
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        send(ws, { type: 'error', message: 'binary messages are not part of the protocol' });
        return;
      }
      const decoded = decodeText(data.toString());
      const parsed = decoded.ok ? parseRequest(decoded.value) : decoded;
      if (!parsed.ok) {
        send(ws, { type: 'error', message: parsed.error });
        return;
      }
      if (observer && !OBSERVER_REQUESTS.has(parsed.value.type)) {
        send(ws, { type: 'error', message: `${parsed.value.type} refused: this is an observer link, which watches the studio and cannot change it` });
        return;
      }
      sendToEngine(parsed.value, id, ws);
    });
  });

  // ---- start ------------------------------------------------------------------------------
  startEngine();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, bindHost, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch((err: NodeJS.ErrnoException) => {
    closing = true;
    engine?.kill();
    rmSync(sessionDir, { recursive: true, force: true });
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
    enginePid: () => engine?.pid,
    async close() {
      closing = true;
      for (const ws of clients.values()) ws.terminate();
      wss.close();
      const child = engine;
      if (child && child.exitCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        await exited;
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(sessionDir, { recursive: true, force: true });
    },
  };
}
