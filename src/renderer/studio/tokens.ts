// How token text is shown: quoted, with invisible characters made visible.
import type { TreeNode } from '../../shared/events.js';

export function visibleText(text: string): string {
  return text.replace(/\n/g, '⏎').replace(/\t/g, '⇥').replace(/\r/g, '');
}

/** A node's token as shown in trees and sentences; the id when the engine had no tokenizer. */
export function tokenLabel(node: Pick<TreeNode, 'token' | 'text'>): string {
  return node.text !== undefined ? `"${visibleText(node.text)}"` : `#${node.token}`;
}

/** "1 request", "2 requests". */
export const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

export function formatNumber(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '−∞';
}

/**
 * A probability (a τ, a layer confidence) with its significant digits: calibrated τ_d such as
 * 0.0004225 or 2.26e-10 are real thresholds, and fixed decimals would print them as 0.00.
 * Three significant digits; below 0.001 in exponent form ("4.23e-4").
 */
export function formatProbability(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return value < 0 ? '−∞' : '∞';
  if (value === 0) return '0';
  if (Math.abs(value) < 1e-3) {
    const [mantissa, exponent] = value.toExponential(digits - 1).split('e');
    return `${trimZeros(mantissa)}e${Number(exponent)}`;
  }
  return trimZeros(value.toPrecision(digits));
}

/** "0.500" → "0.5", "1.00" → "1"; integers and exponents untouched. */
function trimZeros(text: string): string {
  return text.includes('.') && !text.includes('e') ? text.replace(/\.?0+$/, '') : text;
}

/**
 * Two probabilities compared in one sentence (confidence against τ): as many digits as it takes
 * for different values to print differently, so "c ≤ τ" never reads "0.31 ≤ 0.31" for 0.3104 > 0.31.
 */
export function formatCompared(a: number, b: number): [string, string] {
  for (let digits = 3; digits <= 17; digits += 1) {
    const pair: [string, string] = [formatProbability(a, digits), formatProbability(b, digits)];
    if (a === b || pair[0] !== pair[1]) return pair;
  }
  return [String(a), String(b)];
}
