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
}

/** The channel of a process started with child_process.fork. */
export function forkedChildPort(proc: NodeJS.Process): HostPort {
  return {
    post(event) {
      if (proc.connected && proc.send) proc.send(event);
    },
    onMessage(listener) {
      proc.on('message', (data: unknown) => listener(data));
    },
    onClose(listener) {
      proc.on('disconnect', listener);
    },
    close() {
      if (proc.connected) proc.disconnect?.();
    },
  };
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
