// A delivered frame as JSON text, for the hop from a worker to the page. The page's main thread
// pays for whatever it receives: structured clone's deserialiser takes about twice as long as
// JSON.parse for these object-heavy frames (a batch-64 tree set: ~2.6 ms against ~1.5 ms), so the
// worker posts frames as text and the page parses them.
//
// Lossless for validated frames: they came from JSON (the WebSocket's text) except the
// log-probabilities of impossible tokens, which validation turned from null into -Infinity; JSON
// turns them back into null, and frameFromText restores them (trace-schema.ts, logValue).
import type { DeliveredFrame } from '../studio/digest.js';

export function frameToText(frame: DeliveredFrame): string {
  return JSON.stringify(frame);
}

export function frameFromText(text: string): DeliveredFrame {
  const frame = JSON.parse(text) as DeliveredFrame;
  for (const step of frame.steps) {
    for (const request of step.requests) {
      for (const node of request.nodes) {
        if (node.logq === null) node.logq = -Infinity;
        if (node.pathScore === null) node.pathScore = -Infinity;
      }
    }
  }
  return frame;
}
