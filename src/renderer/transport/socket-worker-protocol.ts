// Messages between the page and the worker that owns the web host's WebSocket.
import type { EngineEvent } from '../../shared/messages.js';

export type ToSocketWorker =
  | { type: 'open'; url: string }
  | { type: 'send'; text: string }
  | { type: 'close' }
  /** The page has taken the last frame posted (frame-pacer.ts). */
  | { type: 'ack' };

export type FromSocketWorker =
  | { type: 'open' }
  /** Already parsed, validated and thinned (decode.ts). */
  | { type: 'event'; event: EngineEvent }
  | { type: 'close'; code: number; reason: string };
