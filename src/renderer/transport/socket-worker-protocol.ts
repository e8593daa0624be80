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
  /** Already parsed and validated (decode.ts); a frame comes as `frame` instead. */
  | { type: 'event'; event: EngineEvent }
  /** A frame, parsed, validated and thinned, as JSON text (frame-text.ts: parsing it is cheaper than structured clone). */
  | { type: 'frame'; text: string }
  | { type: 'close'; code: number; reason: string };
