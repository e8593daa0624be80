// Owns the web host's WebSocket off the page's main thread: receiving, JSON.parse and zod
// validation of a batch-64 frame cost tens of milliseconds, which on the page would drop
// animation frames. The page gets validated events, frames thinned to one tree set (decode.ts).
import { decodeIncoming } from './decode.js';
import { FramePacer } from './frame-pacer.js';
import { frameToText } from './frame-text.js';
import type { FromSocketWorker, ToSocketWorker } from './socket-worker-protocol.js';

const scope = self as unknown as { postMessage(message: FromSocketWorker): void; onmessage: ((message: MessageEvent<ToSocketWorker>) => void) | null };
let socket: WebSocket | null = null;
const pacer = new FramePacer((event) =>
  scope.postMessage(event.type === 'frame' ? { type: 'frame', text: frameToText(event) } : { type: 'event', event }),
);

scope.onmessage = (message) => {
  const command = message.data;
  switch (command.type) {
    case 'open': {
      if (socket) return;
      socket = new WebSocket(command.url);
      socket.onopen = () => scope.postMessage({ type: 'open' });
      socket.onmessage = (ev) => {
        const event = decodeIncoming(ev.data);
        if (event) pacer.push(event);
      };
      socket.onclose = (ev) => {
        socket = null;
        scope.postMessage({ type: 'close', code: ev.code, reason: ev.reason });
      };
      return;
    }
    case 'send':
      // The page checks the state before sending; a send racing a close is dropped with the link.
      if (socket?.readyState === WebSocket.OPEN) socket.send(command.text);
      return;
    case 'ack':
      pacer.ack();
      return;
    case 'close':
      if (socket) socket.close();
      else scope.postMessage({ type: 'close', code: 1000, reason: '' });
      return;
  }
};
