import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { computeRunMetrics } from '../../../src/engine/metrics/run-metrics.js';
import { PARQUET_METADATA_KEYS, exportParquet } from '../../../src/output/trace/export-parquet.js';
import { readTrace } from '../../../src/engine/trace/read.js';
import { TraceRecorder } from '../../../src/engine/trace/writer.js';
import type { DeepeningStopReason, GrantKind, RequestStep, StepEvent, TreeNode } from '../../../src/shared/events.js';
import { syntheticRun } from '../../engine/metrics/synthetic-run.js';
import { RUN_OPTIONS, tempDir, testHeader, testRun } from '../../engine/trace/fixtures.js';

type Row = Record<string, unknown>;

async function readTable(file: string): Promise<{ rows: Row[]; kv: Map<string, string | undefined> }> {
  const buffer = await asyncBufferFromFile(file);
  const metadata = await parquetMetadataAsync(buffer);
  const rows = (await parquetReadObjects({ file: buffer })) as Row[];
  return { rows, kv: new Map((metadata.key_value_metadata ?? []).map((e) => [e.key, e.value])) };
}

function groupBy<K>(rows: Row[], key: (r: Row) => K): Map<K, Row[]> {
  const groups = new Map<K, Row[]>();
  for (const r of rows) groups.set(key(r), [...(groups.get(key(r)) ?? []), r]);
  return groups;
}

/** Rebuild the step events from the tables alone (transfers survive only as a total). */
function rebuildSteps(steps: Row[], requests: Row[], nodes: Row[], gates: Row[]): StepEvent[] {
  const key = (r: Row) => `${r.step}/${r.request_id}`;
  const nodesOf = groupBy(nodes, key);
  const gatesOf = groupBy(gates, key);
  const requestsOf = groupBy(requests, (r) => r.step as number);
  return steps.map((s) => ({
    type: 'step',
    step: s.step as number,
    t: s.t_ms as number,
    kmax: s.kmax as number,
    verifiedTokens: s.verified_tokens as number,
    timings: {
      draftMs: s.draft_ms as number,
      packMs: s.pack_ms as number,
      verifyMs: s.verify_ms as number,
      commitMs: s.commit_ms as number,
      totalMs: s.total_ms as number,
      ...(s.prefill_ms !== null ? { prefillMs: s.prefill_ms as number } : {}),
      ...(s.model_ms !== null ? { modelMs: s.model_ms as number } : {}),
    },
    budget: { roots: s.budget_roots as number, base: s.budget_base as number, depth: s.budget_depth as number, width: s.budget_width as number, unused: s.budget_unused as number },
    transfers: [],
    paddingWaste: s.padding_waste as number,
    ...(s.draft_rows !== null ? { draftRows: s.draft_rows as number[] } : {}),
    ...(s.draft_requests !== null ? { draftRequests: s.draft_requests as number[] } : {}),
    requests: (requestsOf.get(s.step as number) ?? []).map((r): RequestStep => {
      const treeNodes = (nodesOf.get(key(r)) ?? []).map(
        (n): TreeNode => ({
          id: n.node_id as number,
          parent: n.parent as number,
          depth: n.depth as number,
          token: n.token as number,
          ...(n.text !== null ? { text: n.text as string } : {}),
          logq: n.logq as number,
          pathScore: n.path_score as number,
          grant: n.grant as GrantKind,
          verified: n.verified as boolean,
        }),
      );
      const accepted = (nodesOf.get(key(r)) ?? []).filter((n) => n.accepted).map((n) => n.node_id as number);
      return {
        requestId: r.request_id as string,
        nodes: treeNodes,
        gates: (gatesOf.get(key(r)) ?? []).map((g) => ({ depth: g.depth as number, confidence: g.confidence as number, tau: g.tau as number, pass: g.pass as boolean })),
        ...(r.stop_reason !== null ? { stop: { reason: r.stop_reason as DeepeningStopReason, depth: r.stop_depth as number } } : {}),
        confidences: r.confidences as number[],
        accepted,
        bonusToken: r.bonus_token as number,
        emitted: new Array(r.emitted_length as number).fill(0),
        ...(r.finished !== null ? { finished: r.finished as RequestStep['finished'] } : {}),
      };
    }),
  }));
}

describe('Parquet export', () => {
  it('round-trips run → JSONL → Parquet → read back with a Parquet reader → the same numbers', async () => {
    const dir = tempDir();
    const jsonl = path.join(dir, 'run.jsonl');
    const recorder = new TraceRecorder(jsonl, testHeader());
    const events = testRun();
    for (const e of events) recorder.step(e);
    const live = recorder.finish('finished');
    const trace = await readTrace(jsonl);

    const files = exportParquet(trace, path.join(dir, 'run.parquet'));
    expect(files.map((f) => path.basename(f))).toEqual(['run.steps.parquet', 'run.requests.parquet', 'run.nodes.parquet', 'run.gates.parquet']);
    const [steps, requests, nodes, gates] = await Promise.all(files.map(readTable));

    expect(steps.rows).toHaveLength(events.length);
    expect(requests.rows).toHaveLength(events.reduce((n, e) => n + e.requests.length, 0));
    expect(nodes.rows).toHaveLength(events.reduce((n, e) => n + e.requests.reduce((m, r) => m + r.nodes.length, 0), 0));
    expect(gates.rows).toHaveLength(events.reduce((n, e) => n + e.requests.reduce((m, r) => m + r.gates.length, 0), 0));
    // Text with quotes, commas and newlines comes back intact.
    expect(nodes.rows.map((n) => n.text)).toEqual(events.flatMap((e) => e.requests.flatMap((r) => r.nodes.map((n) => n.text ?? null))));

    const rebuilt = rebuildSteps(steps.rows, requests.rows, nodes.rows, gates.rows);
    expect(computeRunMetrics(rebuilt, { policy: 'echo' }).metrics).toEqual(live);
    // Per-step totals match the events exactly.
    expect(steps.rows.map((s) => s.accepted_tokens)).toEqual(events.map((e) => e.requests.reduce((n, r) => n + r.accepted.length, 0)));
    expect(steps.rows.map((s) => s.transferred_tokens)).toEqual(events.map((e) => e.transfers.reduce((n, x) => n + x.tokens, 0)));

    for (const table of [steps, requests, nodes, gates]) {
      expect(JSON.parse(table.kv.get(PARQUET_METADATA_KEYS.config)!)).toEqual(testHeader().config);
      expect(table.kv.get(PARQUET_METADATA_KEYS.schemaVersion)).toBe('3');
      expect(JSON.parse(table.kv.get(PARQUET_METADATA_KEYS.summary)!).metrics).toEqual(live);
    }
    expect(gates.kv.get(PARQUET_METADATA_KEYS.table)).toBe('gates');
  });

  it('writes empty tables with their schema (an ar run has no gates and no draft nodes)', async () => {
    const dir = tempDir();
    const arSteps = syntheticRun({ ...RUN_OPTIONS, depth: 1 }).map((e) => ({
      ...e,
      requests: e.requests.map((r) => ({ ...r, nodes: [r.nodes[0]], gates: [], confidences: [], accepted: [] })),
    }));
    const files = exportParquet({ header: testHeader(), steps: arSteps, knobs: [] }, path.join(dir, 'ar'));
    const gates = await readTable(files[3]);
    expect(gates.rows).toEqual([]);
    expect(gates.kv.has(PARQUET_METADATA_KEYS.summary)).toBe(false);
    const buffer = await asyncBufferFromFile(files[3]);
    const schemaNames = (await parquetMetadataAsync(buffer)).schema.slice(1).map((s) => s.name);
    expect(schemaNames).toEqual(['step', 'request_id', 'depth', 'confidence', 'tau', 'pass', 'waived']);
  });
});
