// Chrome / Perfetto trace-event JSON for timing: the run is one process, the engine's step loop
// one track (step → draft, pack, verify, commit), each request its own track with draft and
// verify slices for the steps it took part in, and counters for the budget split.

import type { TraceContents } from '../../engine/index.js';
import { writeTextPieces } from './write-text.js';

/** One trace event; ts and dur in microseconds. */
export interface TraceEvent {
  name: string;
  ph: 'X' | 'C' | 'M' | 'i' | 's' | 'f';
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  cat?: string;
  s?: 'g' | 'p' | 't';
  /** Flow events: the id pairing a start (s) with its finish (f), and binding to the enclosing slice. */
  id?: number;
  bp?: 'e';
  args?: Record<string, unknown>;
}

export interface PerfettoTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  otherData: Record<string, string>;
}

const RUN_PID = 1;
const ENGINE_TID = 0;
const us = (ms: number) => Math.round(ms * 1000 * 1000) / 1000; // µs, to the nanosecond

export function toPerfetto(trace: TraceContents): PerfettoTrace {
  const { header } = trace;
  const events: TraceEvent[] = [
    { name: 'process_name', ph: 'M', pid: RUN_PID, tid: ENGINE_TID, ts: 0, args: { name: `echo-studio ${header.config.policy} run` } },
    { name: 'thread_name', ph: 'M', pid: RUN_PID, tid: ENGINE_TID, ts: 0, args: { name: 'engine steps' } },
    { name: 'thread_sort_index', ph: 'M', pid: RUN_PID, tid: ENGINE_TID, ts: 0, args: { sort_index: 0 } },
  ];
  const tids = new Map<string, number>();
  let flowId = 0;

  for (const s of trace.steps) {
    const { draftMs, packMs, verifyMs, commitMs, totalMs } = s.timings;
    const prefillMs = s.timings.prefillMs ?? 0;
    const start = s.t - totalMs;
    // Phase boundaries in µs, capped at the step's end, so the phases nest exactly in the step.
    const end = us(s.t);
    const phases: [string, number][] = [
      ['prefill', prefillMs],
      ['draft', draftMs],
      ['pack', packMs],
      ['verify', verifyMs],
      ['commit', commitMs],
    ];
    const edges = [us(start)];
    let elapsed = 0;
    for (const [, ms] of phases) edges.push(Math.min(end, us(start + (elapsed += ms))));
    const stepArgs = {
      requests: s.requests.length,
      verifiedTokens: s.verifiedTokens,
      kmax: s.kmax,
      paddingWaste: s.paddingWaste,
      ...(s.timings.modelMs !== undefined ? { modelMs: s.timings.modelMs } : {}),
    };
    events.push({ name: `step ${s.step}`, cat: 'step', ph: 'X', pid: RUN_PID, tid: ENGINE_TID, ts: edges[0], dur: end - edges[0], args: stepArgs });
    phases.forEach(([name, ms], i) => {
      if (name === 'prefill' && ms === 0) return;
      events.push({ name, cat: 'phase', ph: 'X', pid: RUN_PID, tid: ENGINE_TID, ts: edges[i], dur: edges[i + 1] - edges[i] });
    });
    // edges[i] is where phase i starts: draft is phase 1, verify phase 3.
    const [draftStart, draftEnd, verifyStart, verifyEnd] = [edges[1], edges[2], edges[3], edges[4]];
    events.push({ name: 'budget', ph: 'C', pid: RUN_PID, tid: ENGINE_TID, ts: draftStart, args: { ...s.budget } });
    events.push({ name: 'verified tokens', ph: 'C', pid: RUN_PID, tid: ENGINE_TID, ts: draftStart, args: { verified: s.verifiedTokens, kmax: s.kmax } });

    for (const r of s.requests) {
      let tid = tids.get(r.requestId);
      if (tid === undefined) {
        tid = tids.size + 1;
        tids.set(r.requestId, tid);
        events.push({ name: 'thread_name', ph: 'M', pid: RUN_PID, tid, ts: 0, args: { name: r.requestId } });
        events.push({ name: 'thread_sort_index', ph: 'M', pid: RUN_PID, tid, ts: 0, args: { sort_index: tid } });
      }
      const drafted = r.nodes.filter((n) => n.depth >= 0);
      const verified = drafted.filter((n) => n.verified).length;
      const maxDepth = drafted.reduce((d, n) => Math.max(d, n.depth), -1);
      events.push({
        name: 'draft',
        cat: 'request',
        ph: 'X',
        pid: RUN_PID,
        tid,
        ts: draftStart,
        dur: draftEnd - draftStart,
        args: { step: s.step, drafted: drafted.length, depth: maxDepth + 1, gates: r.gates.map((g) => `d${g.depth} ${g.confidence.toFixed(3)} ${g.pass ? '>' : '≤'} ${g.tau}${g.waived ? ' (cut waived)' : ''}`) },
      });
      events.push({
        name: 'verify',
        cat: 'request',
        ph: 'X',
        pid: RUN_PID,
        tid,
        ts: verifyStart,
        dur: verifyEnd - verifyStart,
        args: {
          step: s.step,
          verified,
          accepted: r.accepted.length,
          emitted: r.emitted.length,
          ...(r.emittedText !== undefined ? { text: r.emittedText } : {}),
        },
      });
      if (r.finished) {
        events.push({ name: `finished (${r.finished})`, ph: 'i', s: 't', pid: RUN_PID, tid, ts: end });
      }
    }
    // Budget released by one request and spent by another: an arrow from the giver's draft
    // slice to the receiver's verify slice.
    for (const transfer of s.transfers) {
      const from = tids.get(transfer.from);
      const to = tids.get(transfer.to);
      if (from === undefined || to === undefined) continue;
      const id = ++flowId;
      const args = { tokens: transfer.tokens, step: s.step };
      events.push({ name: 'budget transfer', cat: 'transfer', ph: 's', id, pid: RUN_PID, tid: from, ts: draftStart, args });
      events.push({ name: 'budget transfer', cat: 'transfer', ph: 'f', bp: 'e', id, pid: RUN_PID, tid: to, ts: verifyStart, args });
    }
  }
  return {
    traceEvents: events,
    displayTimeUnit: 'ms',
    otherData: {
      format: `${header.format} v${header.schemaVersion}`,
      policy: header.config.policy,
      config: JSON.stringify(header.config),
      createdAt: header.createdAt,
    },
  };
}

/** Write the trace-event JSON to path, one event per line, without building one huge string. */
export function exportPerfetto(trace: TraceContents, path: string): void {
  const { traceEvents, ...rest } = toPerfetto(trace);
  function* pieces(): Generator<string> {
    yield '{"traceEvents":[\n';
    for (let i = 0; i < traceEvents.length; i++) yield (i > 0 ? ',\n' : '') + JSON.stringify(traceEvents[i]);
    yield `\n],${JSON.stringify(rest).slice(1)}\n`; // the rest of the object after traceEvents
  }
  writeTextPieces(path, pieces());
}
