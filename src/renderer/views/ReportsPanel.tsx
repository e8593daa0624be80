// The Reports view: opens a report folder that `echo-studio reproduce` (or the button here) wrote
// and shows each claim's verdict with what was measured and the noise it was read against, how the
// report was made, and its tables; starts the quick study on the last run's pair (or the bundled
// one) with its progress and a cancel button. The full page (figures and all) saves as one file.
import { useEffect, useMemo, useState, type FormEvent } from 'react';
import type { ReportEvent, ReportTable } from '../../shared/messages.js';
import { useSend, useStudio } from './StudioContext.js';

const VERDICT_CLASS: Record<string, string> = { holds: 'verdict-holds', 'does not hold': 'verdict-fails' };

/** The last part of a folder path (either separator). */
function folderName(dir: string): string {
  return dir.split(/[\\/]/).filter(Boolean).pop() ?? dir;
}

/** Long decimals as the report's own page shows them; everything else as written. */
function formatCell(cell: string): string {
  return /^-?\d+\.\d{4,}$/.test(cell) ? Number(cell).toFixed(3) : cell;
}

function Verdicts({ report }: { report: ReportEvent }) {
  return (
    <ul className="report-claims" data-testid="report-claims">
      {report.claims.map((c) => (
        <li key={c.id} className="report-claim" data-claim={c.id} data-verdict={c.verdict}>
          <div className="report-claim-head">
            <span className={`verdict ${VERDICT_CLASS[c.verdict] ?? 'verdict-na'}`}>{c.verdict}</span>
            <span className="report-claim-text">{c.claim}</span>
          </div>
          <p className="report-claim-line">
            <span className="fact-label">measured</span> {c.measured}
          </p>
          <p className="report-claim-line">
            <span className="fact-label">noise</span> {c.uncertainty}
          </p>
          <p className="report-claim-line muted">
            <span className="fact-label">paper</span> {c.paper} · {c.source} · clock {c.clock}
          </p>
          <p className="report-claim-line muted">{c.because}</p>
        </li>
      ))}
    </ul>
  );
}

function Table({ table }: { table: ReportTable }) {
  return (
    <details className="report-table" data-testid={`report-table-${table.name}`}>
      <summary>
        {table.name} <span className="muted">({table.rows.length} rows)</span>
      </summary>
      <div className="report-table-scroll">
        <table>
          <thead>
            <tr>
              {table.header.map((h) => (
                <th key={h}>{h}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {table.rows.map((row, i) => (
              <tr key={i}>
                {row.map((cell, j) => (
                  <td key={j}>{formatCell(cell)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}

/** A link that saves the report's self-contained page (the folder's report.html) as one file. */
function PageLink({ report }: { report: ReportEvent }) {
  const url = useMemo(() => (report.html === undefined ? null : URL.createObjectURL(new Blob([report.html], { type: 'text/html' }))), [report]);
  useEffect(() => () => (url ? URL.revokeObjectURL(url) : undefined), [url]);
  if (url === null) return <p className="muted">This folder has no report.html.</p>;
  return (
    <p className="report-page">
      <a href={url} download={`${folderName(report.dir)}-report.html`} data-testid="report-page-link">
        Save the full report page
      </a>{' '}
      <span className="muted">(figures and tables; or open report.html in the folder)</span>
    </p>
  );
}

function ReportView({ report }: { report: ReportEvent }) {
  const { meta } = report;
  const counts = report.claims.reduce<Record<string, number>>((n, c) => ({ ...n, [c.verdict]: (n[c.verdict] ?? 0) + 1 }), {});
  return (
    <div className="report" data-testid="report">
      <dl className="report-meta">
        <dt>Folder</dt>
        <dd title={report.dir}>{report.dir}</dd>
        <dt>Pair</dt>
        <dd>
          {meta.pair.draft} · {meta.pair.target}
        </dd>
        <dt>Made</dt>
        <dd>
          {meta.date.replace('T', ' ').slice(0, 16)} UTC in {(meta.seconds / 60).toFixed(1)} min{meta.quick ? ' (quick)' : ''}, clock {meta.clock}
        </dd>
        <dt>Machine</dt>
        <dd>
          {meta.machine.cpu}, {meta.machine.cores} cores, {meta.machine.memoryGiB} GiB, {meta.machine.platform}
        </dd>
        <dt>Command</dt>
        <dd>
          <code data-testid="report-command">{meta.command}</code>
        </dd>
      </dl>
      <p className="report-summary" data-testid="report-summary">
        {report.claims.length} claims: {Object.entries(counts).map(([verdict, n]) => `${n} ${verdict}`).join(', ')}
      </p>
      <PageLink report={report} />
      <Verdicts report={report} />
      {report.tables.map((t) => (
        <Table key={t.name} table={t} />
      ))}
    </div>
  );
}

export function ReportsPanel() {
  const send = useSend();
  const report = useStudio((s) => s.report);
  const study = useStudio((s) => s.progress.study ?? null);
  const runState = useStudio((s) => s.runState);
  const config = useStudio((s) => s.config);
  const [dir, setDir] = useState('');
  const [error, setError] = useState<string | null>(null);
  const live = runState === 'loading' || runState === 'running' || runState === 'paused';
  // The pair of the run started here, when it named folders; else the bundled demo pair.
  const pair = config?.draftDir !== undefined && config.targetDir !== undefined ? { draftDir: config.draftDir, targetDir: config.targetDir } : null;

  const open = (e: FormEvent) => {
    e.preventDefault();
    if (dir.trim() === '') {
      setError('type the path of a report folder');
      return;
    }
    setError(null);
    send({ type: 'report.open', dir: dir.trim() });
  };

  return (
    <div className="view reports-panel">
      <form className="report-open" aria-label="Open a report folder" onSubmit={open} noValidate>
        <div className={`field${error ? ' invalid' : ''}`}>
          <label htmlFor="report-dir">Report folder</label>
          <div className="field-row">
            <input id="report-dir" value={dir} placeholder="a folder echo-studio reproduce wrote" onChange={(e) => setDir(e.target.value)} />
            <button type="submit">Open</button>
          </div>
          {error && (
            <span className="field-error" role="alert">
              {error}
            </span>
          )}
        </div>
      </form>
      <div className="run-buttons">
        <button
          type="button"
          disabled={study !== null || live}
          title={live ? 'stop the run first: the study needs the cores to itself' : 'about 3 minutes on a laptop for the bundled pair'}
          onClick={() => send({ type: 'report.quick', ...(pair ?? {}) })}
        >
          Run quick study
        </button>
        {study !== null && (
          <button type="button" onClick={() => send({ type: 'report.cancel' })}>
            Cancel
          </button>
        )}
        <span className="muted">on {pair ? `${folderName(pair.draftDir)} · ${folderName(pair.targetDir)}` : 'the bundled pair'}</span>
      </div>
      {study !== null && (
        <div className="progress" data-testid="study-progress">
          <span className="progress-task">study</span>
          <progress aria-label="quick study" value={study.total > 0 ? study.done / study.total : undefined} max={1} />
          <span className="progress-text">{study.message}</span>
        </div>
      )}
      {report ? <ReportView report={report} /> : <p className="muted">No report open. Open a folder, or run the quick study: its report lands in the studio's data folder.</p>}
    </div>
  );
}
