import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CSV_COLUMNS, csvField, exportCsv } from '../../../src/output/trace/export-csv.js';
import type { TraceContents } from '../../../src/engine/trace/parse.js';
import { tempDir, testHeader, testRun } from '../../engine/trace/fixtures.js';

/** A strict RFC 4180 reader, for checking only. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let field = '';
  let record: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (text[i] === '"' && text[i + 1] === '"') (field += '"'), (i += 2);
        else if (text[i] === '"') break;
        else if (i >= text.length) throw new Error('unterminated quote');
        else field += text[i++];
      }
      i++;
    } else if (text[i] === ',') {
      record.push(field), (field = ''), i++;
    } else if (text.startsWith('\r\n', i)) {
      record.push(field), records.push(record), (record = []), (field = ''), (i += 2);
    } else {
      if (text[i] === '\n' || text[i] === '\r') throw new Error(`bare line break at ${i}`);
      field += text[i++];
    }
  }
  if (field !== '' || record.length > 0) throw new Error('last record lacks CRLF');
  return records;
}

describe('CSV export', () => {
  it('quotes per RFC 4180', () => {
    expect(csvField('plain')).toBe('plain');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField(undefined)).toBe('');
    expect(csvField(0.25)).toBe('0.25');
  });

  it('writes one row per request-step that reads back field for field', () => {
    const trace: TraceContents = { header: testHeader(), steps: testRun(), knobs: [] };
    const file = path.join(tempDir(), 'run.csv');
    exportCsv(trace, file);
    const [head, ...rows] = parseCsv(readFileSync(file, 'utf8'));
    expect(head).toEqual([...CSV_COLUMNS]);
    const requestSteps = trace.steps.flatMap((s) => s.requests.map((r) => ({ s, r })));
    expect(rows).toHaveLength(requestSteps.length);
    const col = (name: (typeof CSV_COLUMNS)[number]) => head.indexOf(name);
    rows.forEach((row, i) => {
      const { s, r } = requestSteps[i];
      expect(row).toHaveLength(CSV_COLUMNS.length);
      expect(row[col('step')]).toBe(String(s.step));
      expect(row[col('request_id')]).toBe(r.requestId);
      expect(Number(row[col('t_ms')])).toBe(s.t);
      expect(Number(row[col('accepted_length')])).toBe(r.accepted.length);
      expect(row[col('emitted_text')]).toBe(r.emittedText ?? '');
      expect(row[col('finished')]).toBe(r.finished ?? '');
      expect(row[col('confidences')].split(' ').map(Number)).toEqual(r.confidences);
      const failed = r.gates.find((g) => !g.pass);
      expect(row[col('truncated_at_depth')]).toBe(failed ? String(failed.depth) : '');
      expect(row[col('stop_reason')]).toBe(r.stop?.reason ?? '');
      expect(row[col('stop_depth')]).toBe(r.stop ? String(r.stop.depth) : '');
    });
    expect(rows.some((row) => row[col('stop_reason')] === 'max-depth')).toBe(true);
    // The synthetic text has quotes, commas and newlines: the check above read them back.
    expect(rows.some((row) => /["\n,]/.test(row[col('emitted_text')]))).toBe(true);
  });
});
