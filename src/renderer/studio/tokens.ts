// How token text is shown: quoted, with invisible characters made visible.
import type { TreeNode } from '../../shared/events.js';

export function visibleText(text: string): string {
  return text.replace(/\n/g, '⏎').replace(/\t/g, '⇥').replace(/\r/g, '');
}

/** A node's token as shown in trees and sentences; the id when the engine had no tokenizer. */
export function tokenLabel(node: Pick<TreeNode, 'token' | 'text'>): string {
  return node.text !== undefined ? `"${visibleText(node.text)}"` : `#${node.token}`;
}

export function formatNumber(value: number, digits = 2): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '−∞';
}
