// A request's generated text as segments, one per step, so each step's accepted tokens and its
// bonus token can be marked in the request view.
import type { RequestStep } from '../../shared/events.js';

export interface TextSegment {
  step: number;
  /** Text of the accepted draft tokens (may be empty). */
  accepted: string;
  /** Text of the bonus token. */
  bonus: string;
  acceptedCount: number;
}

/** Splits a request-step's emitted text into its accepted part and its bonus part. */
export function textSegment(step: number, req: RequestStep): TextSegment {
  const byId = new Map(req.nodes.map((n) => [n.id, n]));
  const acceptedNodes = req.accepted.map((id) => byId.get(id));
  const acceptedText = acceptedNodes.map((n) => n?.text ?? `#${n?.token ?? '?'}`).join('');
  if (req.emittedText !== undefined) {
    if (req.emittedText.startsWith(acceptedText)) {
      return { step, accepted: acceptedText, bonus: req.emittedText.slice(acceptedText.length), acceptedCount: req.accepted.length };
    }
    // Detokenised text need not be the concatenation of token pieces; keep the engine's text.
    return { step, accepted: req.emittedText, bonus: '', acceptedCount: req.accepted.length };
  }
  return { step, accepted: acceptedText, bonus: `#${req.bonusToken}`, acceptedCount: req.accepted.length };
}
