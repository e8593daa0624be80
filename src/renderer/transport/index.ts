// Picks the transport for where the renderer runs: the preload bridge inside the desktop app,
// the web host's WebSocket in a browser.
import type { PreloadBridge } from '../../shared/messages.js';
import { ElectronTransport } from './electron.js';
import type { Transport } from './types.js';
import { socketUrlFor, WebSocketTransport } from './websocket.js';

export type { ConnectionInfo, ConnectionState, Transport } from './types.js';

export function pickTransport(win: Window & { echoStudio?: PreloadBridge }): Transport {
  if (win.echoStudio) return new ElectronTransport(win.echoStudio);
  return new WebSocketTransport(socketUrlFor(win.location.href));
}
