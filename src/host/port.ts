// The engine host talks to each client through this one small port shape, whatever carries it:
// a forked child's IPC channel, Electron's utilityProcess parentPort, a MessagePort handed over
// by Electron's main process, or a worker_threads MessagePort in tests. Electron types are
// described structurally here so the engine host never imports electron.
import type { EngineEvent } from '../shared/messages.js';

export interface HostPort {
  /** Sends one event to the client. Must not throw when the client has gone. */
  post(event: EngineEvent): void;
  onMessage(listener: (data: unknown) => void): void;
  onClose(listener: () => void): void;
  close(): void;
  /**
   * Messages posted but not yet handed to the operating system, where the channel can tell (a
   * forked child's IPC channel): a long replay waits for it to drain instead of queueing frames
   * in memory faster than the other side reads them.
   */
  backlog?(): number;
}

/**
 * The web host carries many browser clients over the one channel of a forked engine host, so each
 * message on it names its client: requests come as `{client, request}` (and `{client, closed}`
 * when a client goes), answers go back as `{to: client, event}` and broadcasts as `{to: 'all', event}`.
 * The web host then sends an answer only to the socket that asked.
 */
export type ChannelToEngine = { client: number; request: unknown } | { client: number; closed: true };
export type ChannelFromEngine = { to: number | 'all'; event: EngineEvent };

/**
 * The channel of a process started with child_process.fork, split into one port per client of
 * the parent (attached without broadcasts, so it hears only its own answers) and one port that
 * carries broadcasts for all of them. Malformed envelopes are ignored: the parent is the web host.
 */
export function attachForkedChannel(proc: NodeJS.Process, attach: (port: HostPort, options: { broadcasts: boolean; viewer: boolean }) => void): void {
  // Every port shares the one channel, so they share its backlog.
  let unsent = 0;
  const sent = () => {
    unsent -= 1;
  };
  const send = (message: ChannelFromEngine) => {
    if (!proc.connected || !proc.send) return;
    unsent += 1;
    proc.send(message, undefined, {}, sent);
  };
  const backlog = () => unsent;
  const clients = new Map<number, { deliver: (data: unknown) => void; close: () => void }>();
  const disconnectListeners: Array<() => void> = [];
  proc.on('disconnect', () => {
    for (const client of [...clients.values()]) client.close();
    for (const listener of disconnectListeners) listener();
  });

  attach(
    {
      post: (event) => send({ to: 'all', event }),
      onMessage() {
        // nothing arrives on the broadcast port: requests come through their clients' ports
      },
      onClose(listener) {
        disconnectListeners.push(listener);
      },
      close() {
        if (proc.connected) proc.disconnect?.();
      },
      backlog,
    },
    // The fan-out to the parent's clients is no viewer of its own: the clients behind it are.
    { broadcasts: true, viewer: false },
  );

  const clientPort = (id: number): { deliver: (data: unknown) => void; close: () => void } => {
    let closed = false;
    const messageListeners: Array<(data: unknown) => void> = [];
    const closeListeners: Array<() => void> = [];
    const close = () => {
      if (closed) return;
      closed = true;
      clients.delete(id);
      for (const listener of closeListeners) listener();
    };
    const client = { deliver: (data: unknown) => messageListeners.forEach((listener) => listener(data)), close };
    clients.set(id, client);
    attach(
      {
        post(event) {
          if (!closed) send({ to: id, event });
        },
        onMessage(listener) {
          messageListeners.push(listener);
        },
        onClose(listener) {
          closeListeners.push(listener);
        },
        close,
        backlog,
      },
      { broadcasts: false, viewer: true },
    );
    return client;
  };

  proc.on('message', (data: unknown) => {
    if (typeof data !== 'object' || data === null) return;
    const message = data as Partial<{ client: unknown; request: unknown; closed: unknown }>;
    if (typeof message.client !== 'number' || !Number.isInteger(message.client)) return;
    if (message.closed === true) {
      clients.get(message.client)?.close();
      return;
    }
    if (!('request' in message)) return;
    (clients.get(message.client) ?? clientPort(message.client)).deliver(message.request);
  });
}

/** Electron's MessagePortMain, as seen from a utility process. */
export interface MessagePortMainLike {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (e: { data: unknown }) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  start(): void;
  close(): void;
}

/** Electron's `process.parentPort` inside a utility process. */
export interface ParentPortLike {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (e: { data: unknown; ports: MessagePortMainLike[] }) => void): unknown;
}

export function messagePortMainPort(port: MessagePortMainLike): HostPort {
  let closed = false;
  const closeListeners: Array<() => void> = [];
  port.on('close', () => {
    closed = true;
    for (const listener of closeListeners) listener();
  });
  return {
    post(event) {
      if (!closed) port.postMessage(event);
    },
    onMessage(listener) {
      port.on('message', (e) => listener(e.data));
      port.start();
    },
    onClose(listener) {
      closeListeners.push(listener);
    },
    close() {
      closed = true;
      port.close();
    },
  };
}

/** A worker_threads-style port (Node's MessagePort): in-process clients and tests. */
export interface NodeMessagePortLike {
  postMessage(message: unknown): void;
  on(event: 'message', listener: (data: unknown) => void): unknown;
  on(event: 'close', listener: () => void): unknown;
  close(): void;
}

export function nodeMessagePortPort(port: NodeMessagePortLike): HostPort {
  let closed = false;
  port.on('close', () => {
    closed = true;
  });
  return {
    post(event) {
      if (!closed) port.postMessage(event);
    },
    onMessage(listener) {
      port.on('message', listener);
    },
    onClose(listener) {
      port.on('close', listener);
    },
    close() {
      closed = true;
      port.close();
    },
  };
}
