// Parquet export for pandas/polars: one file per table (steps, requests, nodes, gates), each
// carrying the run config, the header and the summary in its key/value metadata.

import { parquetWriteFile, type BasicType, type ColumnSource } from 'hyparquet-writer';
import type { TraceContents } from '../../engine/index.js';
import { stepConfidenceSignal } from '../../shared/trace-schema.js';

export const PARQUET_TABLES = ['steps', 'requests', 'nodes', 'gates'] as const;
export type ParquetTable = (typeof PARQUET_TABLES)[number];

/** Key/value metadata keys written on every table. */
export const PARQUET_METADATA_KEYS = {
  table: 'echo_studio.table',
  schemaVersion: 'echo_studio.schema_version',
  config: 'echo_studio.config',
  header: 'echo_studio.header',
  summary: 'echo_studio.summary',
} as const;

// JSON columns take the value itself; the writer serialises it.
type Cell = number | string | boolean | null | number[];

/** Column-major table built row by row, with declared types so empty tables still have a schema. */
class TableBuilder<Columns extends Record<string, BasicType>> {
  private readonly data: Record<string, Cell[]> = {};
  rows = 0;
  constructor(private readonly types: Columns) {
    for (const name of Object.keys(types)) this.data[name] = [];
  }
  add(row: { [K in keyof Columns]: Cell }): void {
    for (const name of Object.keys(this.types)) this.data[name].push(row[name] ?? null);
    this.rows++;
  }
  columns(): ColumnSource[] {
    return Object.entries(this.types).map(([name, type]) => ({ name, type, data: this.data[name] }));
  }
}

/** Output file of one table: `OUT.steps.parquet` etc.; a trailing `.parquet` on OUT is dropped. */
export function parquetTablePath(out: string, table: ParquetTable): string {
  return `${out.replace(/\.parquet$/i, '')}.${table}.parquet`;
}

const STEP_COLUMNS = {
  step: 'INT32',
  t_ms: 'DOUBLE',
  kmax: 'INT32',
  verified_tokens: 'INT32',
  requests: 'INT32',
  accepted_tokens: 'INT32',
  emitted_tokens: 'INT32',
  draft_ms: 'DOUBLE',
  pack_ms: 'DOUBLE',
  verify_ms: 'DOUBLE',
  commit_ms: 'DOUBLE',
  total_ms: 'DOUBLE',
  prefill_ms: 'DOUBLE',
  model_ms: 'DOUBLE',
  budget_roots: 'INT32',
  budget_base: 'INT32',
  budget_depth: 'INT32',
  budget_width: 'INT32',
  budget_unused: 'INT32',
  transferred_tokens: 'INT32',
  padding_waste: 'DOUBLE',
  draft_rows: 'JSON',
  draft_requests: 'JSON',
  past_rows: 'INT32',
  waiting_requests: 'INT32',
  confidence_signal: 'STRING',
} as const satisfies Record<string, BasicType>;

const REQUEST_COLUMNS = {
  step: 'INT32',
  request_id: 'STRING',
  drafted_nodes: 'INT32',
  verified_nodes: 'INT32',
  accepted_length: 'INT32',
  emitted_length: 'INT32',
  bonus_token: 'INT32',
  emitted_text: 'STRING',
  finished: 'STRING',
  stop_reason: 'STRING',
  stop_depth: 'INT32',
  confidences: 'JSON',
} as const satisfies Record<string, BasicType>;

const NODE_COLUMNS = {
  step: 'INT32',
  request_id: 'STRING',
  node_id: 'INT32',
  parent: 'INT32',
  depth: 'INT32',
  token: 'INT32',
  text: 'STRING',
  logq: 'DOUBLE',
  path_score: 'DOUBLE',
  grant: 'STRING',
  paid_by: 'STRING',
  verified: 'BOOLEAN',
  accepted: 'BOOLEAN',
} as const satisfies Record<string, BasicType>;

const GATE_COLUMNS = {
  step: 'INT32',
  request_id: 'STRING',
  depth: 'INT32',
  confidence: 'DOUBLE',
  tau: 'DOUBLE',
  pass: 'BOOLEAN',
  /** Failed, but the cut was waived (the request kept deepening). */
  waived: 'BOOLEAN',
} as const satisfies Record<string, BasicType>;

type Step = TraceContents['steps'][number];
type RequestOfStep = Step['requests'][number];

/** The four tables, filled a step at a time. */
class ParquetTables {
  readonly steps = new TableBuilder(STEP_COLUMNS);
  readonly requests = new TableBuilder(REQUEST_COLUMNS);
  readonly nodes = new TableBuilder(NODE_COLUMNS);
  readonly gates = new TableBuilder(GATE_COLUMNS);

  addStep(s: Step): void {
    let accepted = 0;
    let emitted = 0;
    for (const r of s.requests) {
      accepted += r.accepted.length;
      emitted += r.emitted.length;
      this.addRequest(s.step, r);
    }
    this.steps.add({
      step: s.step,
      t_ms: s.t,
      kmax: s.kmax,
      verified_tokens: s.verifiedTokens,
      requests: s.requests.length,
      accepted_tokens: accepted,
      emitted_tokens: emitted,
      draft_ms: s.timings.draftMs,
      pack_ms: s.timings.packMs,
      verify_ms: s.timings.verifyMs,
      commit_ms: s.timings.commitMs,
      total_ms: s.timings.totalMs,
      prefill_ms: s.timings.prefillMs ?? null,
      model_ms: s.timings.modelMs ?? null,
      budget_roots: s.budget.roots,
      budget_base: s.budget.base,
      budget_depth: s.budget.depth,
      budget_width: s.budget.width,
      budget_unused: s.budget.unused,
      transferred_tokens: s.transfers.reduce((sum, x) => sum + x.tokens, 0),
      padding_waste: s.paddingWaste,
      draft_rows: s.draftRows ?? null,
      draft_requests: s.draftRequests ?? null,
      past_rows: s.past ?? null,
      waiting_requests: s.waiting ?? null,
      confidence_signal: stepConfidenceSignal(s),
    });
  }

  /** A request's nodes and gates, then its own row. */
  private addRequest(step: number, r: RequestOfStep): void {
    const acceptedIds = new Set(r.accepted);
    let drafted = 0;
    let verified = 0;
    for (const n of r.nodes) {
      if (n.depth >= 0) {
        drafted++;
        if (n.verified) verified++;
      }
      this.nodes.add({
        step,
        request_id: r.requestId,
        node_id: n.id,
        parent: n.parent,
        depth: n.depth,
        token: n.token,
        text: n.text ?? null,
        logq: n.logq,
        path_score: n.pathScore,
        grant: n.grant,
        paid_by: n.paidBy ?? null,
        verified: n.verified,
        accepted: acceptedIds.has(n.id),
      });
    }
    for (const g of r.gates) {
      this.gates.add({ step, request_id: r.requestId, depth: g.depth, confidence: g.confidence, tau: g.tau, pass: g.pass, waived: g.waived === true });
    }
    this.requests.add({
      step,
      request_id: r.requestId,
      drafted_nodes: drafted,
      verified_nodes: verified,
      accepted_length: r.accepted.length,
      emitted_length: r.emitted.length,
      bonus_token: r.bonusToken,
      emitted_text: r.emittedText ?? null,
      finished: r.finished ?? null,
      stop_reason: r.stop?.reason ?? null,
      stop_depth: r.stop?.depth ?? null,
      confidences: r.confidences,
    });
  }

  table(name: ParquetTable): TableBuilder<Record<string, BasicType>> {
    return this[name];
  }
}

/** The run config, the header and the summary, as every table's key/value metadata. */
function tableMetadata(trace: TraceContents, table: ParquetTable): { key: string; value: string }[] {
  return [
    { key: PARQUET_METADATA_KEYS.table, value: table },
    { key: PARQUET_METADATA_KEYS.schemaVersion, value: String(trace.header.schemaVersion) },
    { key: PARQUET_METADATA_KEYS.config, value: JSON.stringify(trace.header.config) },
    { key: PARQUET_METADATA_KEYS.header, value: JSON.stringify(trace.header) },
    ...(trace.summary ? [{ key: PARQUET_METADATA_KEYS.summary, value: JSON.stringify(trace.summary) }] : []),
  ];
}

/** Write the four tables; returns the paths written, in PARQUET_TABLES order. */
export function exportParquet(trace: TraceContents, out: string): string[] {
  const tables = new ParquetTables();
  for (const s of trace.steps) tables.addStep(s);
  return PARQUET_TABLES.map((table) => {
    const filename = parquetTablePath(out, table);
    parquetWriteFile({ filename, columnData: tables.table(table).columns(), kvMetadata: tableMetadata(trace, table), createdBy: trace.header.writer });
    return filename;
  });
}
