// Reads back a report folder that `reproduce` wrote (renderReport's files): how it was made, the
// claims with their verdicts, the CSV tables and the HTML page, for the studio to show. A folder
// that is not a report is refused with one line that names what is missing, never quoting a file.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ReportClaimSchema, ReportMetaSchema, type ReportEvent, type ReportTable } from '../../shared/messages.js';
import { z } from 'zod';
import { Refusal } from '../refusal.js';

/** The report's tables, in the order the report shows them. */
export const REPORT_TABLES = ['table1.csv', 'throughput.csv', 'explain.csv', 'calibration.csv', 'utilisation.csv'] as const;

const ReportJsonSchema = z.object({ kind: z.literal('echo-reproduction'), meta: ReportMetaSchema, claims: z.array(ReportClaimSchema) });

/** Cells of RFC 4180 CSV text (quoted fields may hold commas, quotes and newlines). */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) {
    row.push(cell);
    rows.push(row);
  }
  return rows;
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The report in `dir`; throws one line when the folder is not a report `reproduce` wrote. */
export function readReport(dir: string): Omit<ReportEvent, 'type'> {
  let isFolder: boolean;
  try {
    isFolder = statSync(dir).isDirectory();
  } catch {
    throw new Refusal(`${dir}: no such folder`);
  }
  if (!isFolder) throw new Refusal(`${dir} is a file: choose the report's folder`);
  const jsonFile = path.join(dir, 'report.json');
  const text = readText(jsonFile);
  if (text === null) throw new Refusal(`${dir} is not a report folder: it has no report.json (echo-studio reproduce writes one)`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the file; say only where it is.
    throw new Refusal(`${jsonFile} is not valid JSON`);
  }
  const parsed = ReportJsonSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.length > 0 ? ` (at ${issue.path.join('.')})` : '';
    throw new Refusal(`${jsonFile} is not a reproduction report${where}`);
  }
  const tables: ReportTable[] = [];
  for (const name of REPORT_TABLES) {
    const csv = readText(path.join(dir, name));
    if (csv === null) continue;
    const [header = [], ...rows] = parseCsv(csv);
    tables.push({ name, header, rows });
  }
  const html = readText(path.join(dir, 'report.html'));
  return { dir, meta: parsed.data.meta, claims: parsed.data.claims, tables, ...(html !== null ? { html } : {}) };
}
