// Turns one text message from the engine host into what the page gets: parsed, validated, and a
// frame thinned to its newest step plus digests of the others. Runs in the socket worker (browser)
// or inline where there is no worker (Node tests); both give the page the same events.
import { decodeText, parseEvent, type EngineEvent } from '../../shared/messages.js';
import { thinFrameEvent } from '../studio/digest.js';

/** The event for one incoming message; null for a non-text message (nothing the host sends). */
export function decodeIncoming(data: unknown): EngineEvent | null {
  if (typeof data !== 'string') return null;
  const decoded = decodeText(data);
  const parsed = decoded.ok ? parseEvent(decoded.value) : decoded;
  if (!parsed.ok) return { type: 'error', message: `the engine host sent a message this studio cannot read: ${parsed.error}` };
  return parsed.value.type === 'frame' ? thinFrameEvent(parsed.value) : parsed.value;
}
