// CSV export: one row per request-step, RFC 4180 (CRLF records, fields with a comma, quote, CR
// or LF quoted, quotes doubled), for spreadsheets and quick scripts. Full trees are in Parquet.

import type { TraceContents } from '../../engine/index.js';
import { stepConfidenceSignal } from '../../shared/trace-schema.js';
import { writeTextPieces } from './write-text.js';

export const CSV_COLUMNS = [
  'step',
  't_ms',
  'request_id',
  'kmax',
  'step_verified_tokens',
  'drafted_nodes',
  'verified_nodes',
  'max_verified_depth',
  'accepted_length',
  'emitted_length',
  'bonus_token',
  'emitted_text',
  'finished',
  'gates_passed',
  'gates_failed',
  'truncated_at_depth',
  'stop_reason',
  'stop_depth',
  'confidences',
  'confidence_signal',
  'accepted_text',
] as const;

type CsvValue = string | number | undefined;

export function csvField(value: CsvValue): string {
  if (value === undefined) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function csvRecord(values: CsvValue[]): string {
  return values.map(csvField).join(',') + '\r\n';
}

/** The CSV rows of a trace, header row first. */
export function* csvRows(trace: TraceContents): Generator<string> {
  yield csvRecord([...CSV_COLUMNS]);
  for (const s of trace.steps) {
    for (const r of s.requests) {
      const drafted = r.nodes.filter((n) => n.depth >= 0);
      const verified = drafted.filter((n) => n.verified);
      const failed = r.gates.filter((g) => !g.pass);
      const row: Record<(typeof CSV_COLUMNS)[number], CsvValue> = {
        step: s.step,
        t_ms: s.t,
        request_id: r.requestId,
        kmax: s.kmax,
        step_verified_tokens: s.verifiedTokens,
        drafted_nodes: drafted.length,
        verified_nodes: verified.length,
        max_verified_depth: verified.reduce((d, n) => Math.max(d, n.depth), -1),
        accepted_length: r.accepted.length,
        emitted_length: r.emitted.length,
        bonus_token: r.bonusToken,
        emitted_text: r.emittedText,
        finished: r.finished,
        gates_passed: r.gates.length - failed.length,
        gates_failed: failed.length,
        truncated_at_depth: failed.find((g) => !g.waived)?.depth,
        stop_reason: r.stop?.reason,
        stop_depth: r.stop?.depth,
        confidences: r.confidences.join(' '),
        confidence_signal: stepConfidenceSignal(s),
        // Traces written before nodes carried text leave it empty.
        accepted_text: r.nodes.some((n) => n.text !== undefined) ? r.accepted.map((id) => r.nodes[id]?.text ?? '').join('') : undefined,
      };
      yield csvRecord(CSV_COLUMNS.map((c) => row[c]));
    }
  }
}

export function exportCsv(trace: TraceContents, path: string): void {
  writeTextPieces(path, csvRows(trace));
}
