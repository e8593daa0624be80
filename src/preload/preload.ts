// The sandboxed preload: exposes `window.echoStudio` with one method per request message, event
// and link-state subscriptions, and the native dialogs. ipcRenderer itself never reaches the
// page. Requests and events go over a MessagePort straight to the engine host (main hands one
// over after every page load and engine restart); both directions are validated here.
import { contextBridge, ipcRenderer, type IpcRendererEvent } from 'electron';
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
const MAX_QUEUED_REQUESTS = 256;

let port: MessagePort | null = null;
let queued: unknown[] = [];
let linkState: BridgeLinkState = 'connecting';
let linkDetail: string | undefined;
const eventListeners = new Set<(event: EngineEvent) => void>();
const linkListeners = new Set<(state: BridgeLinkState, detail?: string) => void>();

function deliver(data: unknown): void {
  const parsed = parseEvent(data);
  const event: EngineEvent = parsed.ok ? parsed.value : { type: 'error', message: `the engine host sent a message this studio cannot read: ${parsed.error}` };
  for (const listener of eventListeners) listener(event);
}

function setLink(state: BridgeLinkState, detail?: string): void {
  linkState = state;
  linkDetail = detail;
  for (const listener of linkListeners) listener(state, detail);
}

function send(request: unknown): void {
  const parsed = parseRequest(request);
  if (!parsed.ok) throw new Error(parsed.error);
  if (port) {
    port.postMessage(parsed.value);
  } else {
    if (queued.length >= MAX_QUEUED_REQUESTS) throw new Error('the engine host is not connected; request dropped');
    queued.push(parsed.value);
  }
}

ipcRenderer.on(IPC_CHANNELS.enginePort, (event: IpcRendererEvent) => {
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

ipcRenderer.on(IPC_CHANNELS.engineGone, (_event: IpcRendererEvent, reason: unknown) => {
  port?.close();
  port = null;
  setLink('disconnected', typeof reason === 'string' ? reason : 'the engine host stopped');
});

ipcRenderer.on(IPC_CHANNELS.engineEvent, (_event: IpcRendererEvent, data: unknown) => deliver(data));

const requestMethods = Object.fromEntries(
  REQUEST_TYPES.map((type) => [REQUEST_METHODS[type], (payload?: object) => send({ ...(payload ?? {}), type })]),
) as unknown as RequestMethods;

const asPath = (value: unknown): string | null => (typeof value === 'string' && value.length > 0 ? value : null);

const bridge: PreloadBridge = {
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
    return asPath(await ipcRenderer.invoke(IPC_CHANNELS.chooseModelFolder));
  },
  async chooseTraceFile() {
    return asPath(await ipcRenderer.invoke(IPC_CHANNELS.chooseTraceFile));
  },
  async chooseExportPath(format: TraceExportFormat) {
    return asPath(await ipcRenderer.invoke(IPC_CHANNELS.chooseExportPath, format));
  },
};

contextBridge.exposeInMainWorld('echoStudio', bridge);
