// @vitest-environment happy-dom
// The Reports panel: what it sends (open a folder, the quick study on the right pair, cancel),
// when its buttons are off, what it shows of a report, and when its panel unfolds by itself.
import path from 'node:path';
import { act, cleanup, fireEvent, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { readReport } from '../../../src/engine/reproduce/read-report.js';
import { PANELS } from '../../../src/renderer/panels.js';
import { ReportsPanel } from '../../../src/renderer/views/ReportsPanel.js';
import type { ReportEvent } from '../../../src/shared/messages.js';
import { repoRoot } from '../../host/helpers.js';
import { renderWithStudio } from './render.js';

afterEach(cleanup);

const committed = (): ReportEvent => ({ type: 'report', ...readReport(path.join(repoRoot, 'docs', 'reports', '2026-12-06-h100-quick')) });
const quickButton = () => screen.getByRole('button', { name: 'Run quick study' }) as HTMLButtonElement;

describe('Reports panel', () => {
  it('opens the typed folder, and says so when none is typed', () => {
    const { sent } = renderWithStudio(<ReportsPanel />);
    fireEvent.click(screen.getByRole('button', { name: 'Open' }));
    expect(screen.getByRole('alert').textContent).toBe('type the path of a report folder');
    expect(sent).toEqual([]);
    fireEvent.change(screen.getByLabelText('Report folder'), { target: { value: '  /data/reports/quick-1 ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Open' }));
    expect(sent).toEqual([{ type: 'report.open', dir: '/data/reports/quick-1' }]);
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it("runs the quick study on the last run's folders (else the bundled pair), never beside a live run, and cancels it", () => {
    const { sent, store } = renderWithStudio(<ReportsPanel />);
    fireEvent.click(quickButton());
    expect(sent.at(-1)).toEqual({ type: 'report.quick' });
    act(() => store.getState().runStarted({ draftDir: '/m/draft', targetDir: '/m/target', policy: 'echo', batch: 1, kmax: 8, requests: 1, maxNewTokens: 4, temperature: 0, seed: 0 }));
    expect(screen.getByText('on draft · target')).toBeTruthy();
    act(() => store.getState().ingest({ type: 'run.state', state: 'running' }));
    expect(quickButton().disabled).toBe(true);
    act(() => store.getState().ingest({ type: 'run.state', state: 'finished' }));
    fireEvent.click(quickButton());
    expect(sent.at(-1)).toEqual({ type: 'report.quick', draftDir: '/m/draft', targetDir: '/m/target' });

    expect(screen.queryByRole('button', { name: 'Cancel' })).toBeNull();
    act(() => store.getState().ingest({ type: 'progress', task: 'study', done: 2, total: 5, message: '[calibration 1/1] code' }));
    expect(screen.getByTestId('study-progress').textContent).toContain('[calibration 1/1] code');
    expect(quickButton().disabled).toBe(true); // one at a time
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(sent.at(-1)).toEqual({ type: 'report.cancel' });
    act(() => store.getState().ingest({ type: 'progress', task: 'study', done: 5, total: 5, message: 'cancelled' }));
    expect(screen.queryByTestId('study-progress')).toBeNull();
    expect(quickButton().disabled).toBe(false);
  });

  it('shows each claim with its verdict, numbers and noise band, how the report was made, and its tables', () => {
    const { store } = renderWithStudio(<ReportsPanel />);
    const report = committed();
    act(() => store.getState().ingest(report));
    const items = screen.getByTestId('report-claims').querySelectorAll('li');
    expect(items).toHaveLength(report.claims.length);
    report.claims.forEach((claim, i) => {
      const verdict = items[i].querySelector('.verdict')!;
      expect(verdict.textContent).toBe(claim.verdict);
      expect(verdict.className).toContain(claim.verdict === 'holds' ? 'verdict-holds' : claim.verdict === 'does not hold' ? 'verdict-fails' : 'verdict-na');
      expect(items[i].textContent).toContain(claim.measured);
      expect(items[i].textContent).toContain(claim.uncertainty);
    });
    expect(screen.getByTestId('report-command').textContent).toBe(report.meta.command);
    // Long decimals shortened as the report's page prints them; whole numbers and names as written.
    const table1 = screen.getByTestId('report-table-table1.csv');
    const firstRow = [...table1.querySelectorAll('tbody tr')[0].querySelectorAll('td')].map((td) => td.textContent);
    expect(firstRow.slice(0, 2)).toEqual(report.tables[0].rows[0].slice(0, 2));
    const throughput = report.tables[0].header.indexOf('throughput');
    expect(report.tables[0].rows[0][throughput]).toMatch(/\.\d{4,}$/);
    expect(firstRow[throughput]).toBe(Number(report.tables[0].rows[0][throughput]).toFixed(3));
  });

  it('unfolds its panel when a report arrives or the study starts, and not before', () => {
    const unfoldOn = PANELS.find((p) => p.id === 'reports')!.unfoldOn!;
    const { store } = renderWithStudio(<></>);
    expect(unfoldOn(store.getState())).toBe('');
    store.getState().ingest({ type: 'progress', task: 'study', done: 0, total: 5 });
    const studying = unfoldOn(store.getState());
    expect(studying).not.toBe('');
    store.getState().ingest({ type: 'progress', task: 'study', done: 1, total: 5 });
    expect(unfoldOn(store.getState())).toBe(studying); // progress alone does not unfold it again
    store.getState().ingest(committed());
    expect(unfoldOn(store.getState())).not.toBe(studying);
  });
});
