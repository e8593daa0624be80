// @vitest-environment happy-dom
// One source of truth for the knobs: the engine's knobs events fill the Run panel's form, Apply
// sends only what the user changed, and gates are added, moved and removed on the histograms.
import { act, cleanup, fireEvent, screen, waitFor } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EngineKnobsEvent } from '../../../src/shared/messages.js';
import { calibrationReason } from '../../../src/renderer/studio/histograms.js';
import { Histograms } from '../../../src/renderer/views/Histograms.js';
import { formToKnobs, DEFAULT_FORM, RunPanel, syncForm } from '../../../src/renderer/views/RunPanel.js';
import { sampleRequest, sampleStep } from '../studio/fixtures.js';
import { fakeLayout, renderWithStudio } from './render.js';

afterEach(cleanup);

const TAUS_LABEL = 'τ_d (depth:τ, …; empty: calibrate first)';
const engineKnobs = (over: Partial<EngineKnobsEvent> = {}): EngineKnobsEvent => ({
  type: 'knobs',
  policy: 'echo',
  batch: 16,
  kmax: 96,
  taus: { '0': 0.2, '2': 0.35 },
  confidence: 'path-prob',
  ...over,
});
const value = (label: string) => (screen.getByLabelText(label) as HTMLInputElement).value;

describe('knobs from the engine', () => {
  it('fills the form with what the engine runs, and Apply sends only the changed K_max', () => {
    const { store, sent } = renderWithStudio(<RunPanel />);
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest(engineKnobs({ calibration: { source: 'warm-up', confidence: 'path-prob', depths: [] } }));
    });
    expect(value(TAUS_LABEL)).toBe('0:0.2, 2:0.35');
    // A τ dragged on a histogram comes back as the engine's knobs, and lands in the form.
    act(() => store.getState().ingest(engineKnobs({ taus: { '0': 0.42, '2': 0.35 } })));
    expect(value(TAUS_LABEL)).toBe('0:0.42, 2:0.35');
    fireEvent.change(screen.getByLabelText('K_max'), { target: { value: '128' } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply knobs' }));
    expect(sent).toEqual([{ type: 'knobs.set', knobs: { kmax: 128 } }]);
  });

  it('puts back the engine values after a refused change and says why', () => {
    const { store } = renderWithStudio(<RunPanel />);
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest(engineKnobs());
    });
    fireEvent.change(screen.getByLabelText('batch size'), { target: { value: '64' } });
    fireEvent.change(screen.getByLabelText('K_max'), { target: { value: '256' } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply knobs' }));
    act(() => store.getState().ingest(engineKnobs({ refused: 'K_max (256) is below the batch size (64)' })));
    expect(value('batch size')).toBe('16');
    expect(value('K_max')).toBe('96');
    expect(screen.getByTestId('knobs-note').textContent).toMatch(/refused \(K_max \(256\) is below the batch size \(64\)/);
  });

  it("bounds the batch field by the engine's memory plan and says why in place, before Apply", () => {
    const { store, sent } = renderWithStudio(<RunPanel />);
    const batchLimit = { max: 48, beyond: '49 KV slots of 640 rows: the pair needs about 9.1 GiB' };
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest(engineKnobs({ batchLimit }));
    });
    const field = screen.getByLabelText('batch size') as HTMLInputElement;
    expect(field.max).toBe('48');
    // Past the loaded 16 slots and within the plan: no complaint.
    fireEvent.change(field, { target: { value: '32' } });
    expect(screen.queryByRole('alert')).toBeNull();
    fireEvent.change(field, { target: { value: '64' } });
    expect(screen.getByRole('alert').textContent).toBe(`at most 48 for this pair: ${batchLimit.beyond}`);
    fireEvent.click(screen.getByRole('button', { name: 'Apply knobs' }));
    expect(sent).toEqual([]);
    fireEvent.change(field, { target: { value: '48' } });
    fireEvent.change(screen.getByLabelText('K_max'), { target: { value: '128' } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply knobs' }));
    expect(sent).toEqual([{ type: 'knobs.set', knobs: { batch: 48, kmax: 128 } }]);
  });

  it('keeps an edit the user has not applied when the engine reports a τ change', () => {
    const edited = { ...syncForm(DEFAULT_FORM, engineKnobs(), null), kmax: '200' };
    const next = syncForm(edited, engineKnobs({ taus: { '0': 0.5 } }), engineKnobs());
    expect(next.kmax).toBe('200');
    expect(next.taus).toBe('0:0.5');
    expect(formToKnobs(next, engineKnobs({ taus: { '0': 0.5 } }))).toEqual({ knobs: { kmax: 200 } });
    // No gates at all reads as "none", never as empty (which would mean: calibrate).
    expect(syncForm(DEFAULT_FORM, engineKnobs({ taus: {} }), null).taus).toBe('none');
  });
});

describe('gates on the histograms', () => {
  let restore: () => void;
  beforeEach(() => {
    restore = fakeLayout(434, 150);
  });
  afterEach(() => restore());

  const histograms = [
    { depth: 0, edges: [0, 0.5, 1], accepted: [1, 9], rejected: [8, 2], auc: 0.66 },
    { depth: 1, edges: [0, 0.5, 1], accepted: [3, 4], rejected: [4, 3], auc: 0.52 },
  ];
  const calibration = {
    source: 'warm-up' as const,
    confidence: 'path-margin' as const,
    delta: 0.75,
    significance: 0.05,
    targetDepth: 4,
    depths: [
      { depth: 0, accepted: 40, rejected: 30, auc: 0.66, tau: null, sweetSpot: false },
      { depth: 1, accepted: 30, rejected: 20, auc: 0.61, tau: 0.12, sweetSpot: false },
    ],
  };

  it('adds a gate where a depth is clicked, removes it, and shows why the calibration chose none', async () => {
    const { store, sent } = renderWithStudio(<Histograms />);
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest(engineKnobs({ taus: {}, calibration }));
      store.getState().ingest({ type: 'frame', steps: [sampleStep(0, [{ ...sampleRequest(), gates: [] }])], histograms });
    });
    const box = await screen.findByTestId('chart-box-1', undefined, { timeout: 3000 });
    await waitFor(() => expect(box.querySelector('svg')).not.toBeNull(), { timeout: 3000 });
    expect(screen.getByTestId('calibration-headline').textContent).toMatch(/no gate chosen/);
    expect(screen.getByTestId('calibration-reason-0').textContent).toMatch(/no τ cut layers accepted significantly less often.*significance 0.05: no gate/);
    expect(screen.getByTestId('calibration-reason-1').textContent).toMatch(/AUC 0.61 ≤ δ 0.75: not a sweet spot/);
    // Nothing to drag yet: no drag hint, only the click one.
    expect(screen.queryByText('drag τ to move a gate')).toBeNull();
    expect(screen.getByTestId('gate-hint')).toBeTruthy();
    // Plot area: left 34 (y axis), width 434 − 34 − 10 = 390: a click at 34 + 0.25·390 is τ 0.25.
    fireEvent.click(box, { clientX: 34 + 0.25 * 390 });
    expect(sent).toEqual([{ type: 'knobs.set', knobs: { taus: { '1': 0.25 } } }]);
    expect((await screen.findByTestId('tau-line-1')).getAttribute('aria-valuenow')).toBe('0.25');
    act(() => store.getState().ingest(engineKnobs({ taus: { '1': 0.25 }, calibration })));
    expect(screen.getByText('drag τ to move a gate')).toBeTruthy();
    fireEvent.click(screen.getByTestId('remove-gate-1'));
    expect(sent[1]).toEqual({ type: 'knobs.set', knobs: { taus: {} } });
    expect(screen.queryByTestId('tau-line-1')).toBeNull();
  });

  it('offers no gate editing for a finished run or a policy without gates', async () => {
    const { store } = renderWithStudio(<Histograms />);
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest(engineKnobs({ policy: 'eagle2', taus: {} }));
      store.getState().ingest({ type: 'frame', steps: [sampleStep(0, [{ ...sampleRequest(), gates: [] }])], histograms });
    });
    await screen.findByTestId('chart-box-0', undefined, { timeout: 3000 });
    expect(screen.queryByTestId('gate-hint')).toBeNull();
    expect(screen.getByTestId('chart-box-0').className).not.toContain('editable');
  });

  it('words each calibration verdict', () => {
    expect(calibrationReason({ ...calibration, depths: [{ depth: 2, accepted: 3, rejected: 1, auc: null, tau: null, sweetSpot: false }] }, 2)).toMatch(/too few samples/);
    expect(calibrationReason({ ...calibration, depths: [{ depth: 2, accepted: 90, rejected: 80, auc: 0.81, tau: 0.3, sweetSpot: true }] }, 2)).toMatch(/AUC 0.81 > δ 0.75 and τ 0.3 passed the test at significance 0.05: gated/);
    expect(calibrationReason({ source: 'flags', confidence: 'path-prob', depths: [] }, 0)).toMatch(/given with the run/);
  });
});
