// The web host's engine host: a forked child whose one IPC channel carries every browser client's
// messages (port.ts, attachForkedChannel). Its events are checked (frames excepted, see below) and
// handed on by addressee; an engine host that exits unasked is restarted (engine-restarts.ts),
// says hello again and reopens the replayed trace, and the studio is told in one line.
import { fork, type ChildProcess } from 'node:child_process';
import { parseEvent, type EngineEvent, type EngineRequest } from '../shared/messages.js';
import { engineRestarts, exitReason } from './engine-restarts.js';
import type { ChannelFromEngine, ChannelToEngine } from './port.js';

/** The client id of the web host's own requests. */
export const WEB_HOST_CLIENT = 0;

export interface EngineChild {
  /** Sends one message on the engine host's channel; false when the engine host is not there. */
  send(message: ChannelToEngine): boolean;
  /** Sends a request as the web host itself. */
  sendAsHost(request: EngineRequest): void;
  pid(): number | undefined;
  /** Stops the engine host for good (no restart) and waits for it to exit. */
  stop(): Promise<void>;
}

export interface EngineChildOptions {
  entry: string;
  args: string[];
  /** A trace the engine host opens as soon as it starts, and again after a restart (`trace replay`). */
  openTrace?: string;
  log: (line: string) => void;
  /** An event for one client id (WEB_HOST_CLIENT: the web host's own) or for everyone. */
  deliver(to: number | 'all', event: EngineEvent): void;
  /** The engine host exited (whatever comes next): what waited on it fails. */
  onExit(): void;
  /** A restart, or giving up on restarts, in one line for every studio. */
  announce(message: string): void;
}

/** A frame as the engine host sends it: an object of type 'frame' with its steps in an array. */
function isFrameEnvelope(event: unknown): boolean {
  return typeof event === 'object' && event !== null && (event as { type?: unknown }).type === 'frame' && Array.isArray((event as { steps?: unknown }).steps);
}

export function startEngineChild(options: EngineChildOptions): EngineChild {
  const restarts = engineRestarts('echo-studio serve');
  let engine: ChildProcess | null = null;
  let stopping = false;

  const send = (message: ChannelToEngine): boolean => {
    if (!engine || !engine.connected) return false;
    engine.send(message);
    return true;
  };
  const sendAsHost = (request: EngineRequest) => void send({ client: WEB_HOST_CLIENT, request });

  const receive = (data: unknown) => {
    const envelope = data as Partial<ChannelFromEngine> | null;
    const to = envelope?.to;
    // Frames are passed on as they came: the engine host is this server's own child, and each
    // browser's transport validates every event it receives. Checking a long replay's frames
    // here too would spend this process's time (and other clients' answers) on them twice.
    const frame = isFrameEnvelope(envelope?.event);
    const parsed = frame ? null : parseEvent(envelope?.event);
    if ((parsed !== null && !parsed.ok) || (to !== 'all' && typeof to !== 'number')) {
      options.log(`dropped a malformed message from the engine host: ${parsed !== null && !parsed.ok ? parsed.error : 'no addressee'}`);
      return;
    }
    options.deliver(to, parsed === null ? (envelope!.event as EngineEvent) : parsed.value);
  };

  const start = () => {
    const child = fork(options.entry, options.args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    engine = child;
    // Clients that connect later get the replay with their hello.
    if (options.openTrace) sendAsHost({ type: 'trace.open', path: options.openTrace });
    child.on('message', receive);
    child.on('error', (err) => options.log(`engine host: ${err.message}`));
    child.on('exit', (code, signal) => {
      if (engine === child) engine = null;
      options.onExit();
      if (stopping) return;
      const { restart, message } = restarts.gone(exitReason(code, signal));
      options.announce(message);
      if (restart) {
        start();
        sendAsHost({ type: 'hello' });
      }
    });
  };
  start();

  return {
    send,
    sendAsHost,
    pid: () => engine?.pid,
    async stop() {
      stopping = true;
      const child = engine;
      if (child && child.exitCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        await exited;
      }
    },
  };
}
