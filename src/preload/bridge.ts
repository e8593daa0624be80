// The preload's bridge, built from an ipcRenderer-shaped object so it can be tested without
// Electron. Requests go over a MessagePort straight to the engine host (main hands one over after
// every page load and engine restart); both directions are validated here.
import {
  IPC_CHANNELS,
  parseEvent,
  parseRequest,
  REQUEST_METHODS,
  REQUEST_TYPES,
  type BridgeLinkState,
  type EngineEvent,
  type PreloadBridge,
  type RequestMethods,
  type TraceExportFormat,
} from '../shared/messages.js';

/** Requests sent before the port arrives wait here (bounded: a stuck link must not grow memory). */
export const MAX_QUEUED_REQUESTS = 256;

/** The part of Electron's ipcRenderer the bridge uses. */
export interface IpcLike {
  on(channel: string, listener: (event: { ports: readonly MessagePort[] }, ...args: unknown[]) => void): unknown;
  invoke(channel: string, ...args: unknown[]): Promise<unknown>;
}

export function createBridge(ipc: IpcLike): PreloadBridge {
  let port: MessagePort | null = null;
  let queued: unknown[] = [];
  let linkState: BridgeLinkState = 'connecting';
  let linkDetail: string | undefined;
  const eventListeners = new Set<(event: EngineEvent) => void>();
  const linkListeners = new Set<(state: BridgeLinkState, detail?: string) => void>();

  const deliver = (data: unknown): void => {
    const parsed = parseEvent(data);
    const event: EngineEvent = parsed.ok
      ? parsed.value
      : { type: 'error', message: `the engine host sent a message this studio cannot read: ${parsed.error}` };
    for (const listener of eventListeners) listener(event);
  };

  const setLink = (state: BridgeLinkState, detail?: string): void => {
    linkState = state;
    linkDetail = detail;
    for (const listener of linkListeners) listener(state, detail);
  };

  const send = (request: unknown): void => {
    const parsed = parseRequest(request);
    if (!parsed.ok) throw new Error(parsed.error);
    if (port) {
      port.postMessage(parsed.value);
    } else {
      if (queued.length >= MAX_QUEUED_REQUESTS) throw new Error('the engine host is not connected; request dropped');
      queued.push(parsed.value);
    }
  };

  ipc.on(IPC_CHANNELS.enginePort, (event) => {
    const next = event.ports[0];
    if (!next) return;
    port?.close();
    port = next;
    port.onmessage = (message) => deliver(message.data);
    port.start();
    for (const request of queued) port.postMessage(request);
    queued = [];
    setLink('connected');
  });

  ipc.on(IPC_CHANNELS.engineGone, (_event, reason) => {
    port?.close();
    port = null;
    setLink('disconnected', typeof reason === 'string' ? reason : 'the engine host stopped');
  });

  ipc.on(IPC_CHANNELS.engineEvent, (_event, data) => deliver(data));

  const requestMethods = Object.fromEntries(
    REQUEST_TYPES.map((type) => [REQUEST_METHODS[type], (payload?: object) => send({ ...(payload ?? {}), type })]),
  ) as unknown as RequestMethods;

  const asPath = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);

  return {
    ...requestMethods,
    onEvent(listener) {
      eventListeners.add(listener);
      return () => eventListeners.delete(listener);
    },
    onLinkState(listener) {
      linkListeners.add(listener);
      listener(linkState, linkDetail);
      return () => linkListeners.delete(listener);
    },
    async chooseModelFolder() {
      return asPath(await ipc.invoke(IPC_CHANNELS.chooseModelFolder));
    },
    async chooseTraceFile() {
      return asPath(await ipc.invoke(IPC_CHANNELS.chooseTraceFile));
    },
    async chooseExportPath(format: TraceExportFormat) {
      return asPath(await ipc.invoke(IPC_CHANNELS.chooseExportPath, format));
    },
  };
}
