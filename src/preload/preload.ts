// The sandboxed preload: exposes `window.echoStudio` (see bridge.ts) — one method per request
// message, event and link-state subscriptions, native dialogs. ipcRenderer itself never reaches
// the page.
import { contextBridge, ipcRenderer } from 'electron';
import { createBridge } from './bridge.js';

contextBridge.exposeInMainWorld('echoStudio', createBridge(ipcRenderer));
