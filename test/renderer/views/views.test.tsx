// @vitest-environment happy-dom
import { act, cleanup, fireEvent, screen, waitFor, within } from '@testing-library/react';
import { Profiler, type ReactNode } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { StudioState } from '../../../src/renderer/studio/store.js';
import { useThrottledStudio } from '../../../src/renderer/views/StudioContext.js';
import { nodeStates } from '../../../src/renderer/studio/nodeStates.js';
import { BudgetFlow } from '../../../src/renderer/views/BudgetFlow.js';
import { ErrorBanner } from '../../../src/renderer/views/ErrorBanner.js';
import { GateGrid } from '../../../src/renderer/views/GateGrid.js';
import { MetricsChart } from '../../../src/renderer/views/MetricsChart.js';
import { Histograms } from '../../../src/renderer/views/Histograms.js';
import { NOTICE_MS, ProgressBar } from '../../../src/renderer/views/ProgressBar.js';
import { RequestView } from '../../../src/renderer/views/RequestTree.js';
import { RunPanel } from '../../../src/renderer/views/RunPanel.js';
import { SuperTreeCanvas } from '../../../src/renderer/views/SuperTreeCanvas.js';
import { STREAMING_MS, TeachingPanel } from '../../../src/renderer/views/TeachingPanel.js';
import { TraceScrubber } from '../../../src/renderer/views/TraceScrubber.js';
import { sampleRequest, sampleStep } from '../studio/fixtures.js';
import { fakeLayout, renderWithStudio } from './render.js';

afterEach(cleanup);

const frameOf = (...steps: ReturnType<typeof sampleStep>[]) => ({ type: 'frame' as const, steps });

/** Counts the renders (commits) of what it wraps: a streamed frame must not re-render views it does not change. */
function counted(children: ReactNode): { ui: ReactNode; renders: () => number } {
  let renders = 0;
  return {
    ui: (
      <Profiler id="counted" onRender={() => (renders += 1)}>
        {children}
      </Profiler>
    ),
    renders: () => renders,
  };
}

describe('useThrottledStudio', () => {
  const sameParity = (a: number, b: number): boolean => a % 2 === b % 2;
  function Parity() {
    const n = useThrottledStudio((s: StudioState) => s.latestStep?.step ?? 0, 200, sameParity);
    return <span data-testid="parity">{n % 2 === 0 ? 'even' : 'odd'}</span>;
  }

  it('does not re-render for an equal value, and shows the newest one when it changes', () => {
    vi.useFakeTimers();
    try {
      const { ui, renders } = counted(<Parity />);
      const { store } = renderWithStudio(<>{ui}</>);
      const before = renders();
      for (const step of [2, 4, 6]) {
        act(() => store.getState().ingest(frameOf(sampleStep(step, [sampleRequest()]))));
        act(() => vi.advanceTimersByTime(250));
      }
      expect(renders()).toBe(before);
      expect(screen.getByTestId('parity').textContent).toBe('even');
      act(() => store.getState().ingest(frameOf(sampleStep(7, [sampleRequest()]))));
      act(() => vi.advanceTimersByTime(250));
      expect(screen.getByTestId('parity').textContent).toBe('odd');
      // And back: the value shown is tracked, not the last one handed out.
      act(() => store.getState().ingest(frameOf(sampleStep(8, [sampleRequest()]))));
      act(() => vi.advanceTimersByTime(250));
      expect(screen.getByTestId('parity').textContent).toBe('even');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('RunPanel', () => {
  it('refuses K_max below the batch size, naming the problem, and sends nothing', () => {
    const { sent } = renderWithStudio(<RunPanel />);
    fireEvent.change(screen.getByLabelText('batch size'), { target: { value: '32' } });
    fireEvent.change(screen.getByLabelText('K_max'), { target: { value: '16' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(screen.getByRole('alert').textContent).toMatch(/K_max \(16\) is below the batch size \(32\)/);
    expect(sent).toEqual([]);
  });

  it('rejects malformed τ_d pairs next to the field', () => {
    const { sent } = renderWithStudio(<RunPanel />);
    fireEvent.change(screen.getByLabelText('τ_d (depth:τ, …; empty: calibrate first)'), { target: { value: '0:0.2, two:0.3' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(screen.getByRole('alert').textContent).toBe('"two:0.3" is not depth:τ (e.g. 2:0.35), "none" or empty');
    expect(sent).toEqual([]);
  });

  it('starts a validated run, then pauses, steps and applies knobs without restarting', () => {
    const { sent, store } = renderWithStudio(<RunPanel />);
    fireEvent.change(screen.getByLabelText('batch size'), { target: { value: '8' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(sent[0]).toEqual({
      type: 'run.start',
      // No τ_d given: the engine calibrates them on a warm-up first, as the command line does.
      // Nor a signal: the calibration keeps the one that separates accepted from rejected better.
      // K_max follows the batch by the run's default rule, as on the command line: max(64, 6 × 8).
      config: { domain: 'code', policy: 'echo', batch: 8, kmax: 64, requests: 64, maxNewTokens: 64, temperature: 0, seed: 1 },
    });
    act(() => store.getState().ingest({ type: 'run.state', state: 'running' }));
    expect((screen.getByRole('button', { name: 'Start' }) as HTMLButtonElement).disabled).toBe(true);
    fireEvent.click(screen.getByRole('button', { name: 'Pause' }));
    act(() => store.getState().ingest({ type: 'run.state', state: 'paused' }));
    fireEvent.click(screen.getByRole('button', { name: 'One step' }));
    fireEvent.change(screen.getByLabelText('τ_d (depth:τ, …; empty: calibrate first)'), { target: { value: '0:0.25, 2:0.4' } });
    fireEvent.change(screen.getByLabelText('K_max'), { target: { value: '128' } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply knobs' }));
    expect(sent.slice(1)).toEqual([
      { type: 'run.pause' },
      { type: 'run.step' },
      { type: 'knobs.set', knobs: { kmax: 128, batch: 8, taus: { '0': 0.25, '2': 0.4 } } },
    ]);
    expect(store.getState().taus).toEqual({ '0': 0.25, '2': 0.4 });
    // Non-knob settings stay locked while the run lives.
    expect((screen.getByLabelText('temperature') as HTMLInputElement).disabled).toBe(true);
    expect((screen.getByLabelText('confidence signal (what τ is compared with)') as HTMLSelectElement).disabled).toBe(true);
  });

  it('sends τ_d as given, none as no gates, and leaves calibrated ones alone when knobs change', () => {
    const { sent, store } = renderWithStudio(<RunPanel />);
    const taus = screen.getByLabelText('τ_d (depth:τ, …; empty: calibrate first)');
    fireEvent.change(taus, { target: { value: 'none' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(sent[0]).toMatchObject({ type: 'run.start', config: { policy: 'echo', taus: {} } });
    act(() => store.getState().ingest({ type: 'run.state', state: 'finished' }));
    fireEvent.change(taus, { target: { value: ' ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect((sent[1] as { config: object }).config).not.toHaveProperty('taus');
    act(() => store.getState().ingest({ type: 'run.state', state: 'running' }));
    fireEvent.change(screen.getByLabelText('K_max'), { target: { value: '120' } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply knobs' }));
    expect(sent[2]).toEqual({ type: 'knobs.set', knobs: { kmax: 120, batch: 16 } });
  });

  it("asks the host for K_max from this machine's knee and fills it in for the batch asked about", () => {
    const { sent, store } = renderWithStudio(<RunPanel />);
    fireEvent.change(screen.getByLabelText('batch size'), { target: { value: '32' } });
    const ask = screen.getByRole('button', { name: "K_max from this machine's knee" }) as HTMLButtonElement;
    fireEvent.click(ask);
    expect(sent).toEqual([{ type: 'hw.knee', batch: 32 }]);
    // While the host times the target (its 'knee' progress task), the button waits.
    act(() => store.getState().ingest({ type: 'progress', task: 'knee', done: 3, total: 17 }));
    expect(ask.disabled).toBe(true);
    act(() => {
      store.getState().ingest({ type: 'progress', task: 'knee', done: 17, total: 17, message: 'knee at 30 tokens' });
      store.getState().ingest({ type: 'hw.knee', batch: 32, knee: 30, kmax: 62, tArMs: 1.9, target: '/models/target' });
    });
    expect(ask.disabled).toBe(false);
    expect((screen.getByLabelText('K_max') as HTMLInputElement).value).toBe('62');
    expect(screen.getByTestId('knee-suggestion').textContent).toBe('knee 30 tokens: K_max 62 for batch 32');
    // Batch 32 is past a knee of 30: the form says ar may be faster here; below the knee it does not.
    expect(screen.getByTestId('knee-past').textContent).toContain('Batch 32 is at or past the knee');
    act(() => store.getState().ingest({ type: 'hw.knee', batch: 32, knee: 40, kmax: 40, tArMs: 1.9, target: '/models/target' }));
    expect(screen.queryByTestId('knee-past')).toBeNull();
    expect((screen.getByLabelText('K_max') as HTMLInputElement).value).toBe('40');
    act(() => store.getState().ingest({ type: 'hw.knee', batch: 32, knee: 30, kmax: 62, tArMs: 1.9, target: '/models/target' }));
    // K_max follows the measured knee for the form's batch: the knee below it, batch + knee past it.
    fireEvent.change(screen.getByLabelText('batch size'), { target: { value: '8' } });
    expect((screen.getByLabelText('K_max') as HTMLInputElement).value).toBe('30');
    act(() => store.getState().ingest({ type: 'hw.knee', batch: 64, knee: 30, kmax: 94, tArMs: 1.9, target: '/models/target' }));
    expect((screen.getByLabelText('K_max') as HTMLInputElement).value).toBe('30');
    expect(screen.getByTestId('kmax-source').textContent).toContain("K_max from this machine's measured knee (30 tokens verified for about the price of one), for batch 8");
    // Hugging Face folders need a target.
    fireEvent.click(screen.getByLabelText('Hugging Face folders'));
    fireEvent.click(ask);
    expect(screen.getByRole('alert').textContent).toBe('choose the target folder first: its forward is what gets timed');
    fireEvent.change(screen.getByLabelText('target folder'), { target: { value: '/models/mine' } });
    fireEvent.click(ask);
    expect(sent[1]).toEqual({ type: 'hw.knee', batch: 8, targetDir: '/models/mine' });
  });

  it('prices a gated policy as the clock in use charges, as the command line does on --hw, and says so', () => {
    const { sent, store } = renderWithStudio(<RunPanel />);
    // The wall clock: no price per token, K_max filled, and the form says so.
    expect(screen.getByTestId('priced-by').textContent).toMatch(/^echo fills K_max: the wall clock has no price per token/);
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect((sent[0] as { config: object }).config).not.toHaveProperty('verifyCost');
    act(() => store.getState().ingest({ type: 'run.state', state: 'finished' }));
    // A modelled device: its knee, γ and draft forward price the run.
    act(() => store.getState().setClock('h100:70b'));
    expect(screen.getByTestId('priced-by').textContent).toMatch(/^echo is priced as the modelled h100:70b charges/);
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    const priced = (sent[1] as { config: { verifyCost?: { knee: number; gamma: number }; draftCost?: number } }).config;
    expect(priced.verifyCost?.knee).toBe(222);
    expect(priced.verifyCost?.gamma).toBeGreaterThan(0);
    expect(priced.draftCost).toBeGreaterThan(0);
    act(() => store.getState().ingest({ type: 'run.state', state: 'finished' }));
    // A policy that is not gated runs as configured, and the form says nothing of a price.
    fireEvent.change(screen.getByLabelText('policy'), { target: { value: 'static' } });
    expect(screen.queryByTestId('priced-by')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect((sent[2] as { config: object }).config).not.toHaveProperty('verifyCost');
  });

  it('takes K_max from the knee of the clock in use until it is typed, and says when it leaves almost nothing to draft', () => {
    const { store } = renderWithStudio(<RunPanel />);
    const kmax = () => (screen.getByLabelText('K_max') as HTMLInputElement).value;
    // The wall clock with no knee measured: the run's default rule for the batch, said to be one.
    expect(kmax()).toBe('96');
    expect(screen.getByTestId('kmax-source').textContent).toMatch(/default for the batch, max\(64, 6 × batch\)/);
    // A modelled clock's knee: the device's (a laptop CPU serving 8B: 7 tokens), batch + knee past it.
    act(() => store.getState().setClock('cpu-laptop:8b'));
    expect(kmax()).toBe('23');
    expect(screen.getByTestId('kmax-source').textContent).toContain("the modelled cpu-laptop:8b clock's knee (7 tokens");
    // A measured knee on the wall clock: batch 16 under a knee of 18 gets K_max 18, 2 draft tokens, and is told so.
    act(() => {
      store.getState().setClock('wall');
      store.getState().ingest({ type: 'hw.knee', batch: 16, knee: 18, kmax: 18, tArMs: 1.9, target: '/models/target' });
    });
    expect(kmax()).toBe('18');
    expect(screen.getByTestId('kmax-thin').textContent).toBe(
      'K_max 18 leaves 2 draft tokens for 16 requests (0.13 each): almost nothing to draft; past the knee every drafted token lengthens verification, so a smaller batch leaves more to draft.',
    );
    // Typed, K_max is the user's: neither the clock nor the batch moves it.
    fireEvent.change(screen.getByLabelText('K_max'), { target: { value: '64' } });
    act(() => store.getState().setClock('h100:8b'));
    fireEvent.change(screen.getByLabelText('batch size'), { target: { value: '4' } });
    expect(kmax()).toBe('64');
    expect(screen.queryByTestId('kmax-source')).toBeNull();
  });

  it('shows a run started from another window by the knobs the engine reports, and no guessed settings', () => {
    const { store } = renderWithStudio(<RunPanel />);
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest({ type: 'knobs', policy: 'echo', batch: 4, kmax: 48, taus: {} });
    });
    expect((screen.getByLabelText('K_max') as HTMLInputElement).value).toBe('48');
    // The form's default 64 requests would be a guess at a run of 48: nothing is shown instead.
    expect(screen.queryByLabelText('requests')).toBeNull();
    expect(screen.getByTestId('run-elsewhere').textContent).toContain('started from another window');
    act(() => store.getState().ingest({ type: 'run.state', state: 'finished' }));
    expect(screen.getByLabelText('requests')).toBeTruthy();
  });

  it("shows an opened trace's policy and K_max instead of the previous run's", () => {
    const { store } = renderWithStudio(<RunPanel />);
    const metrics = { policy: 'static', steps: 1, requests: 1, generatedTokens: 3, wallMs: 50, throughput: 60, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 10 };
    expect((screen.getByLabelText('policy') as HTMLSelectElement).value).toBe('echo');
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'finished' });
      store.getState().ingest({ ...frameOf(sampleStep(0, [sampleRequest()], { kmax: 40 })), metrics });
    });
    expect((screen.getByLabelText('policy') as HTMLSelectElement).value).toBe('static');
    expect((screen.getByLabelText('K_max') as HTMLInputElement).value).toBe('40');
  });

  it('offers the confidence signal for the gated policies only, and sends the chosen one', () => {
    const { sent } = renderWithStudio(<RunPanel />);
    const signal = () => screen.queryByLabelText('confidence signal (what τ is compared with)') as HTMLSelectElement | null;
    expect([...signal()!.options].map((o) => o.value)).toEqual(['auto', 'path-prob', 'path-margin']);
    expect(signal()!.value).toBe('auto');
    fireEvent.change(signal()!, { target: { value: 'path-margin' } });
    fireEvent.change(screen.getByLabelText('τ_d (depth:τ, …; empty: calibrate first)'), { target: { value: '0:0.6' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(sent[0]).toMatchObject({ type: 'run.start', config: { policy: 'echo', taus: { '0': 0.6 }, confidence: 'path-margin' } });
    fireEvent.change(screen.getByLabelText('policy'), { target: { value: 'static' } });
    expect(signal()).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect((sent[1] as { config: object }).config).not.toHaveProperty('confidence');
  });

  it('sends a draft attention window when one is given, refuses a malformed one, and offers none for ar', () => {
    const { sent } = renderWithStudio(<RunPanel />);
    const label = 'draft attention window (sink:recent rows; empty: the whole past)';
    fireEvent.change(screen.getByLabelText(label), { target: { value: '64' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(screen.getByRole('alert').textContent).toBe('"64" is not sink:recent rows (e.g. 4:64), or empty for the whole past');
    fireEvent.change(screen.getByLabelText(label), { target: { value: '4:0' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(screen.getByRole('alert').textContent).toBe('the recent window is at least 1 row');
    expect(sent).toEqual([]);
    fireEvent.change(screen.getByLabelText(label), { target: { value: ' 4 : 64 ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(sent[0]).toMatchObject({ type: 'run.start', config: { policy: 'echo', draftWindow: { sink: 4, recent: 64 } } });
    fireEvent.change(screen.getByLabelText('policy'), { target: { value: 'ar' } });
    expect(screen.queryByLabelText(label)).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect((sent[1] as { config: object }).config).not.toHaveProperty('draftWindow');
  });
});

describe('errors and progress', () => {
  it('shows an engine error with its detail until dismissed', () => {
    const { store } = renderWithStudio(<ErrorBanner />);
    act(() => store.getState().ingest({ type: 'error', message: 'target model failed to load', detail: 'missing model.safetensors' }));
    expect(screen.getByRole('alert').textContent).toContain('target model failed to load');
    expect(screen.getByRole('alert').textContent).toContain('missing model.safetensors');
    fireEvent.click(screen.getByRole('button', { name: 'dismiss: target model failed to load' }));
    expect(screen.queryByRole('alert')).toBeNull();
  });

  it('turns a failing send into a visible error instead of swallowing it', () => {
    const { store } = renderWithStudio(
      <>
        <ErrorBanner />
        <RunPanel />
      </>,
      () => {
        throw new Error('the engine link is down');
      },
    );
    fireEvent.click(screen.getByRole('button', { name: 'Start' }));
    expect(store.getState().errors.map((e) => e.message)).toEqual(['Could not send run.start to the engine']);
    expect(screen.getAllByRole('alert')[0].textContent).toContain('the engine link is down');
  });

  it('shows a bar per long task and removes it when done', () => {
    const { store } = renderWithStudio(<ProgressBar />);
    act(() => store.getState().ingest({ type: 'progress', task: 'graph build', done: 3, total: 4, message: 'layer 3' }));
    expect(screen.getByTestId('progress-graph build').textContent).toContain('75% — layer 3');
    act(() => store.getState().ingest({ type: 'progress', task: 'graph build', done: 4, total: 4 }));
    expect(screen.queryByTestId('progress-graph build')).toBeNull();
    // Done without a message: nothing more to tell.
    expect(screen.queryByTestId('notice-graph build')).toBeNull();
  });

  it('offers to cancel opening a trace, and only that', () => {
    const { store, sent } = renderWithStudio(<ProgressBar />);
    act(() => store.getState().ingest({ type: 'progress', task: 'graph build', done: 1, total: 4 }));
    expect(screen.queryByRole('button', { name: 'Cancel' })).toBeNull();
    act(() => store.getState().ingest({ type: 'progress', task: 'trace', done: 120, total: 1000, message: 'reading big.jsonl: 24 of 200 MB' }));
    fireEvent.click(screen.getByRole('button', { name: 'Cancel' }));
    expect(sent).toEqual([{ type: 'trace.cancel' }]);
  });

  it("shows a finished task's answer as a notice that goes by itself after a few seconds", () => {
    vi.useFakeTimers();
    try {
      const { store } = renderWithStudio(<ProgressBar />);
      act(() => store.getState().ingest({ type: 'progress', task: 'export', done: 1, total: 1, message: 'exported 32 steps as csv to /tmp/run.csv' }));
      expect(screen.queryByTestId('progress-export')).toBeNull();
      expect(screen.getByTestId('notice-export').textContent).toContain('exported 32 steps as csv to /tmp/run.csv');
      act(() => vi.advanceTimersByTime(NOTICE_MS - 100));
      expect(screen.queryByTestId('notice-export')).not.toBeNull();
      act(() => vi.advanceTimersByTime(200));
      expect(screen.queryByTestId('notice-export')).toBeNull();
      // Or dismissed at once.
      act(() => store.getState().ingest({ type: 'progress', task: 'model', done: 1, total: 1, message: 'llama, 6 layers' }));
      fireEvent.click(screen.getByRole('button', { name: 'dismiss: llama, 6 layers' }));
      expect(screen.queryByTestId('notice-model')).toBeNull();
      // Tasks that finish together show one notice, the newest, not a stack.
      act(() => {
        for (const task of ['load', 'graphs', 'calibrate']) store.getState().ingest({ type: 'progress', task, done: 1, total: 1, message: `${task} done` });
      });
      expect(screen.getAllByText(/ done$/)).toHaveLength(1);
      expect(screen.getByTestId('notice-calibrate').textContent).toContain('calibrate done');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('RequestView', () => {
  it('draws the selected request with one SVG node per verified node, coloured by state', async () => {
    const { store, container } = renderWithStudio(<RequestView />);
    const req = sampleRequest();
    act(() => {
      store.getState().ingest(frameOf(sampleStep(0, [req])));
      store.getState().selectRequest('3');
    });
    await waitFor(() => expect(container.querySelector('svg.request-tree')).not.toBeNull());
    const drawn = [...container.querySelectorAll('svg.request-tree [data-state]')].map((g) => g.getAttribute('data-state'));
    const expected = nodeStates(req).filter((s) => s !== 'pruned');
    expect(drawn).toEqual(expected);
    expect(container.querySelector('[data-grant="depth"]')).not.toBeNull();
    expect(container.querySelector('[data-grant="width"]')).not.toBeNull();
    expect(container.textContent).toContain('+1 pruned');
    expect(container.querySelectorAll('[data-gate="pass"]')).toHaveLength(2);
    fireEvent.click(screen.getByLabelText(/show pruned nodes/));
    expect(container.querySelectorAll('svg.request-tree [data-state="pruned"]')).toHaveLength(1);
    // Generated text: accepted part and bonus part of the step.
    expect(container.querySelector('.accepted-tokens')?.textContent).toBe(' t1 t3');
    expect(container.querySelector('.bonus-token')?.textContent).toBe(' bonus');
  });
});

describe('views a streaming frame does not change', () => {
  it('the replay scrubber does not re-render while a run streams, and shows the newest step once it finishes', () => {
    const { ui, renders } = counted(<TraceScrubber />);
    const { store } = renderWithStudio(<>{ui}</>);
    act(() => store.getState().ingest({ type: 'run.state', state: 'running' }));
    const before = renders();
    for (let i = 0; i < 6; i += 1) act(() => store.getState().ingest(frameOf(sampleStep(i, [sampleRequest()]))));
    expect(renders()).toBe(before);
    act(() => store.getState().ingest({ type: 'run.state', state: 'finished' }));
    expect(screen.getByTestId('trace-scrubber-step').textContent).toBe('step 5 of 5');
  });

  it('the request view with no request open does not re-render per frame; an opened request shows its newest step', () => {
    vi.useFakeTimers();
    try {
      const { ui, renders } = counted(<RequestView />);
      const { store, container } = renderWithStudio(<>{ui}</>);
      act(() => store.getState().ingest({ type: 'run.state', state: 'running' }));
      const before = renders();
      for (let i = 0; i < 6; i += 1) {
        act(() => store.getState().ingest(frameOf(sampleStep(i, [sampleRequest()]))));
        act(() => vi.advanceTimersByTime(250));
      }
      expect(renders()).toBe(before);
      act(() => store.getState().selectRequest('3'));
      act(() => vi.advanceTimersByTime(250));
      expect(container.querySelector('.summary')?.textContent).toMatch(/^step 5 ·/);
      act(() => store.getState().ingest(frameOf(sampleStep(6, [sampleRequest()]))));
      act(() => store.getState().ingest({ type: 'run.state', state: 'paused' }));
      act(() => vi.advanceTimersByTime(250));
      expect(container.querySelector('.summary')?.textContent).toMatch(/^step 6 ·/);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('TeachingPanel', () => {
  it('pauses a running run and lists one sentence per decision of the shown step', async () => {
    const { store, sent } = renderWithStudio(<TeachingPanel />);
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest(frameOf(sampleStep(5, [sampleRequest()])));
    });
    fireEvent.click(screen.getByRole('button', { name: 'Step through decisions' }));
    expect(sent).toEqual([{ type: 'run.pause' }]);
    await waitFor(() => expect(screen.getByTestId('decisions').textContent).toContain('Step 5:'));
    const items = within(screen.getByTestId('decisions')).getAllByRole('listitem');
    // budget, unused budget, 2 gate passes, a depth extension, a width expansion, what it was given, the verification.
    expect(items).toHaveLength(8);
    act(() => store.getState().ingest({ type: 'run.state', state: 'paused' }));
    fireEvent.click(screen.getByRole('button', { name: 'next step ▶' }));
    expect(sent.at(-1)).toEqual({ type: 'run.step' });
  });

  it('follows a streaming run within a fraction of a second and says which step it explains', () => {
    vi.useFakeTimers();
    try {
      const { store } = renderWithStudio(<TeachingPanel />);
      act(() => store.getState().ingest({ type: 'run.state', state: 'running' }));
      for (let step = 0; step < 10; step += 1) {
        act(() => store.getState().ingest(frameOf(sampleStep(step, [sampleRequest()]))));
        act(() => vi.advanceTimersByTime(66));
      }
      act(() => vi.advanceTimersByTime(STREAMING_MS + 50));
      expect(screen.getByTestId('teaching-step').textContent).toBe('step 9');
      expect(screen.getByTestId('decisions').textContent).toContain('Step 9:');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('Super-Tree and Request panel', () => {
  it('show the same step once the run pauses or finishes, and the pinned one when the user pins', async () => {
    const restore = fakeLayout(800, 400);
    try {
      const { store } = renderWithStudio(
        <>
          <SuperTreeCanvas />
          <RequestView />
          <TeachingPanel />
        </>,
      );
      act(() => {
        store.getState().ingest({ type: 'run.state', state: 'running' });
        store.getState().ingest(frameOf(sampleStep(20, [sampleRequest()])));
        store.getState().selectRequest('3');
      });
      await waitFor(() => expect(screen.getByTestId('decisions').textContent).toContain('Step 20:'));
      // The last frames land just before the run stops; the text views must not lag behind.
      act(() => {
        store.getState().ingest(frameOf(sampleStep(21, [sampleRequest()]), sampleStep(32, [sampleRequest()])));
        store.getState().ingest({ type: 'run.state', state: 'finished' });
      });
      expect(screen.getByTestId('decisions').textContent).toContain('Step 32:');
      expect(screen.getByLabelText('Request view').querySelector('.summary')?.textContent).toMatch(/^step 32 ·/);
      await waitFor(() => expect(screen.getByTestId('super-tree-summary').textContent).toMatch(/^step 32 ·/));
      // A step the user pinned wins in every view.
      // The text views follow in the same task; the canvas on its next frame.
      act(() => store.getState().pinStep(20));
      expect(screen.getByTestId('decisions').textContent).toContain('Step 20:');
      expect(screen.getByLabelText('Request view').querySelector('.summary')?.textContent).toMatch(/^step 20 ·/);
      await waitFor(() => expect(screen.getByTestId('super-tree-summary').textContent).toMatch(/^step 20 ·/));
    } finally {
      restore();
    }
  });
});

describe('TraceScrubber', () => {
  it('appears for a finished run, and moving it sends trace.seek; the replay keeps the end of the range', () => {
    const { store, sent } = renderWithStudio(<TraceScrubber />);
    const steps = Array.from({ length: 11 }, (_, i) => sampleStep(i, [sampleRequest()]));
    act(() => {
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest(frameOf(...steps));
    });
    expect(screen.queryByTestId('trace-scrubber')).toBeNull();
    act(() => store.getState().ingest({ type: 'run.state', state: 'finished' }));
    const slider = screen.getByRole('slider', { name: 'step to replay up to' }) as HTMLInputElement;
    expect(slider.max).toBe('10');
    expect(screen.getByTestId('trace-scrubber-step').textContent).toBe('step 10 of 10');
    fireEvent.change(slider, { target: { value: '4' } });
    expect(screen.getByTestId('trace-scrubber-step').textContent).toBe('step 4 of 10');
    expect(sent).toEqual([]);
    fireEvent.pointerUp(slider);
    expect(sent).toEqual([{ type: 'trace.seek', step: 4 }]);
    // The host re-sends steps 0…4: the store rebuilds, the range still ends at step 10.
    act(() => store.getState().ingest(frameOf(...steps.slice(0, 5))));
    expect(store.getState().latestStep?.step).toBe(4);
    expect(store.getState().points).toHaveLength(5);
    expect(screen.getByTestId('trace-scrubber-step').textContent).toBe('step 4 of 10');
    // Keys move it too.
    fireEvent.change(slider, { target: { value: '5' } });
    fireEvent.keyUp(slider, { key: 'ArrowRight' });
    expect(sent.at(-1)).toEqual({ type: 'trace.seek', step: 5 });
  });

  it("takes a new trace's end when a replay starts without a seek", () => {
    const { store } = renderWithStudio(<TraceScrubber />);
    act(() => {
      store.getState().ingest(frameOf(...Array.from({ length: 11 }, (_, i) => sampleStep(i, [sampleRequest()]))));
      store.getState().ingest({ type: 'run.state', state: 'finished' });
    });
    act(() => store.getState().ingest(frameOf(...Array.from({ length: 4 }, (_, i) => sampleStep(i, [sampleRequest()])))));
    expect(screen.getByTestId('trace-scrubber-step').textContent).toBe('step 3 of 3');
  });
});

describe('BudgetFlow', () => {
  it('shows the split of K_max and the transfers of the step', async () => {
    const restore = fakeLayout();
    try {
      const { store, container } = renderWithStudio(<BudgetFlow />);
      act(() => store.getState().ingest(frameOf(sampleStep(0, [sampleRequest()], { transfers: [{ from: '9', to: '3', tokens: 2 }] }))));
      await waitFor(() => expect(screen.getByTestId('budget-base').textContent).toBe('base 8'));
      // 2 of 16 tokens is 50 of the bar's 400 px: room for the count, not the name, which the legend gives.
      expect(screen.getByTestId('budget-unused').textContent).toBe('2');
      expect(screen.getByTestId('budget-legend').textContent).toContain('unused 2');
      expect(container.textContent).toContain('2 tokens moved from truncated to confident requests');
      fireEvent.click(screen.getByRole('button', { name: 'request 3' }));
      expect(store.getState().selectedRequestId).toBe('3');
    } finally {
      restore();
    }
  });
});

describe('Histograms', () => {
  let restore: () => void;
  beforeEach(() => {
    restore = fakeLayout(434, 150);
  });
  afterEach(() => restore());

  it('draws a chart per depth with AUC and sends a nudged τ as knobs.set', async () => {
    const { store, sent } = renderWithStudio(<Histograms />);
    act(() =>
      store.getState().ingest({
        type: 'frame',
        steps: [sampleStep(0, [sampleRequest()])],
        histograms: [
          // 20 of each class: enough for this run's AUC alone to call it a sweet spot.
          { depth: 0, edges: [0, 0.5, 1], accepted: [2, 18], rejected: [16, 4], auc: 0.86 },
          { depth: 1, edges: [0, 0.5, 1], accepted: [3, 4], rejected: [4, 3], unverified: [0, 0], auc: 0.52 },
          { depth: 2, edges: [0, 0.5, 1], accepted: [0, 5], rejected: [1, 2], unverified: [12, 0], auc: 0.93 },
        ],
      }),
    );
    await waitFor(() => expect(screen.getByTestId('histogram-0').textContent).toContain('AUC 0.86'), { timeout: 3000 });
    expect(screen.getByTestId('live-auc-0').textContent).toBe('this run: AUC 0.86');
    expect(screen.getByTestId('sweet-spot-0').textContent).toBe('sweet spot (this run)');
    expect(screen.getByTestId('histogram-1').textContent).not.toContain('sweet spot');
    // Layers never verified are counted apart, and only where there are any.
    await waitFor(() => expect(screen.getByTestId('unverified-2').textContent).toBe('12 unverified'), { timeout: 3000 });
    expect(screen.getByTestId('histogram-2').getAttribute('data-samples')).toBe('20');
    expect(screen.queryByTestId('unverified-0')).toBeNull();
    expect(screen.queryByTestId('unverified-1')).toBeNull();
    // Depth 0 is gated in the step (τ 0.30 in its gate check); depth 1 is not, so it has no line.
    expect(screen.queryByTestId('tau-line-1')).toBeNull();
    const line = await screen.findByTestId('tau-line-0', undefined, { timeout: 3000 });
    expect(line.getAttribute('aria-valuenow')).toBe('0.3');
    fireEvent.keyDown(line, { key: 'ArrowRight' });
    expect(sent).toEqual([{ type: 'knobs.set', knobs: { taus: { '0': 0.31, '2': 0.35 } } }]);
    expect(store.getState().taus['0']).toBe(0.31);
  });

  it('maps a drag over the plot to τ and commits it on release', async () => {
    const { store, sent } = renderWithStudio(<Histograms />);
    act(() =>
      store.getState().ingest({
        type: 'frame',
        steps: [sampleStep(0, [sampleRequest()])],
        histograms: [{ depth: 0, edges: [0, 0.5, 1], accepted: [1, 9], rejected: [8, 2], auc: 0.86 }],
      }),
    );
    const line = await screen.findByTestId('tau-line-0', undefined, { timeout: 3000 });
    line.setPointerCapture = () => undefined;
    // Plot area: left 34 (y axis), width 434 − 34 − 10 = 390; x = 34 + 0.5·390 → τ 0.5.
    fireEvent.pointerDown(line, { clientX: 34 + 0.3 * 390, pointerId: 1 });
    fireEvent.pointerMove(line, { clientX: 34 + 0.5 * 390, pointerId: 1 });
    expect(sent).toEqual([]);
    fireEvent.pointerUp(line, { clientX: 34 + 0.5 * 390, pointerId: 1 });
    expect(sent).toEqual([{ type: 'knobs.set', knobs: { taus: { '0': 0.5, '2': 0.35 } } }]);
  });

  it('names the confidence signal the steps report, since τ only means something in it', () => {
    const { store } = renderWithStudio(<Histograms />);
    expect(screen.queryByTestId('confidence-signal')).toBeNull();
    // A step without the field comes from a version 1 trace, written before signals: path-prob.
    act(() => store.getState().ingest({ type: 'frame', steps: [sampleStep(0, [sampleRequest()])] }));
    expect(screen.getByTestId('confidence-signal').textContent).toContain('path-prob');
    act(() => store.getState().ingest({ type: 'frame', steps: [{ ...sampleStep(0, [sampleRequest()]), confidence: 'path-margin' }] }));
    expect(screen.getByTestId('confidence-signal').textContent).toContain('path-margin');
    act(() => store.getState().ingest({ type: 'frame', steps: [{ ...sampleStep(1, [sampleRequest()]), confidence: 'path-prob' }] }));
    expect(screen.getByTestId('confidence-signal').textContent).toContain('path-prob');
  });
});

describe('SuperTreeCanvas', () => {
  it('redraws from a store subscription and summarises the shown step', async () => {
    const restore = fakeLayout(800, 400);
    try {
      const { store } = renderWithStudio(<SuperTreeCanvas />);
      act(() => store.getState().ingest(frameOf(sampleStep(7, [sampleRequest(), sampleRequest({ requestId: '4' })]))));
      await waitFor(() =>
        expect(screen.getByTestId('super-tree-summary').textContent).toBe('step 7 · 2 requests · 16 drafted · 14 verified · 4 accepted'),
      );
      expect(screen.getByTestId('super-tree-canvas').dataset.step).toBe('7');
      // One request is "1 request".
      act(() => store.getState().ingest(frameOf(sampleStep(8, [sampleRequest()]))));
      await waitFor(() => expect(screen.getByTestId('super-tree-summary').textContent).toMatch(/^step 8 · 1 request · /));
    } finally {
      restore();
    }
  });
});

describe('MetricsChart', () => {
  it('keeps the current run for comparison and overlays it until cleared', async () => {
    const restore = fakeLayout();
    try {
      const { store } = renderWithStudio(<MetricsChart />);
      act(() => store.getState().runStarted({ policy: 'static', batch: 2, kmax: 16, requests: 4, maxNewTokens: 8, temperature: 0, seed: 1 }));
      expect((screen.getByRole('button', { name: 'Keep for comparison' }) as HTMLButtonElement).disabled).toBe(true);
      act(() => store.getState().ingest(frameOf(sampleStep(0, [sampleRequest()]), sampleStep(1, [sampleRequest()]))));
      fireEvent.click(screen.getByRole('button', { name: 'Keep for comparison' }));
      expect(store.getState().compare?.label).toBe('static');
      expect(store.getState().compare?.points).toHaveLength(2);
      fireEvent.click(await screen.findByRole('button', { name: 'Clear comparison (static)' }));
      expect(store.getState().compare).toBeNull();
    } finally {
      restore();
    }
  });
});

describe('MetricsChart summary', () => {
  it("says where a step's time went when the metrics carry it", async () => {
    const { store } = renderWithStudio(<MetricsChart />);
    const metrics = { policy: 'echo', steps: 2, requests: 1, generatedTokens: 4, wallMs: 40, throughput: 100, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 10 };
    act(() => store.getState().ingest({ ...frameOf(sampleStep(0, [sampleRequest()])), metrics }));
    expect(screen.queryByTestId('step-time')).toBeNull();
    act(() => store.getState().ingest({ ...frameOf(sampleStep(1, [sampleRequest()])), metrics: { ...metrics, stepTime: { draftMs: 4.25, verifyMs: 16.8, prefillMs: 9.31, otherMs: 0.5 } } }));
    // The summary re-renders at most once a second.
    await waitFor(() => expect(screen.getByTestId('step-time').textContent).toBe('draft 4.3 · verify 16.8 · prefill 9.3 ms wall clock'), { timeout: 3000 });
    expect(screen.queryByTestId('draft-window')).toBeNull();
  });

  it('compares the run with the kept one: throughput, steps and what a step cost', async () => {
    const { store } = renderWithStudio(<MetricsChart />);
    const metrics = { policy: 'static', steps: 97, requests: 4, generatedTokens: 32, wallMs: 2800, throughput: 2900, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 10, stepTime: { draftMs: 3.2, verifyMs: 15, prefillMs: 8.5, otherMs: 1 } };
    // static: 3 tokens in 50 ms; then echo, a new run, 3 tokens in 40 ms: 1.25× the throughput.
    act(() => store.getState().ingest({ ...frameOf(sampleStep(0, [sampleRequest()])), metrics }));
    await waitFor(() => expect(screen.getByTestId('run-metrics').textContent).toContain('static'), { timeout: 3000 });
    expect(screen.queryByTestId('run-comparison')).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Keep for comparison' }));
    const echo = { ...metrics, policy: 'echo', steps: 90, throughput: 3000, stepTime: { draftMs: 3.9, verifyMs: 15, prefillMs: 9, otherMs: 1 } };
    const faster = sampleStep(0, [sampleRequest()], { timings: { draftMs: 10, packMs: 1, verifyMs: 20, commitMs: 2, totalMs: 40 } });
    act(() => store.getState().ingest({ type: 'run.state', state: 'running' }));
    act(() => store.getState().ingest({ ...frameOf(faster), metrics: echo }));
    await waitFor(() => expect(screen.getByTestId('run-comparison').textContent).toBe('1.250× its throughput wall clock90 steps to its 97 · 1.043× its time a step · 1.059× at its step cost'), { timeout: 3000 });
    expect(screen.getByText('against static')).toBeTruthy();
  });

  it('reads a run the same live and replayed, and says a comparison with itself compares nothing', async () => {
    const { store } = renderWithStudio(<MetricsChart />);
    const metrics = { policy: 'static', steps: 2, requests: 1, generatedTokens: 6, wallMs: 100, throughput: 447.2, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 10 };
    const steps = [sampleStep(0, [sampleRequest()]), sampleStep(1, [sampleRequest()])];
    act(() => {
      store.getState().runStarted({ policy: 'static', batch: 1, kmax: 16, requests: 1, maxNewTokens: 8, temperature: 0, seed: 1 });
      store.getState().ingest({ type: 'run.state', state: 'running' });
      store.getState().ingest({ ...frameOf(...steps), metrics });
      store.getState().ingest({ type: 'run.state', state: 'finished' });
    });
    // 6 tokens over the steps' 100 ms, whatever wall time the engine's metrics count.
    await waitFor(() => expect(screen.getByTestId('throughput').textContent).toBe('60.0 tok/s wall clock'), { timeout: 3000 });
    fireEvent.click(screen.getByRole('button', { name: 'Keep for comparison' }));
    // The same run's trace opened: the same number, labelled with the trace's policy, and no 1.000× against itself.
    act(() => store.getState().ingest({ ...frameOf(...steps), metrics: { ...metrics, policy: 'echo', throughput: 440 } }));
    await waitFor(() => expect(screen.getByTestId('run-comparison').textContent).toBe('the kept run itself (the same steps): nothing to compare'), { timeout: 3000 });
    expect(screen.getByTestId('throughput').textContent).toBe('60.0 tok/s wall clock');
    expect(store.getState().config).toBeNull();
    await waitFor(() => expect(screen.getByTestId('run-metrics').textContent).toMatch(/^policyecho/), { timeout: 3000 });
  });

  it('says which clock each time is on, and prices the step split on a modelled clock', async () => {
    const { store } = renderWithStudio(<MetricsChart />);
    const metrics = { policy: 'echo', steps: 1, requests: 1, generatedTokens: 3, wallMs: 50, throughput: 60, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 12, stepTime: { draftMs: 4, verifyMs: 16, prefillMs: 9, otherMs: 1 } };
    act(() => {
      store.getState().ingest({ ...frameOf(sampleStep(0, [sampleRequest()])), metrics });
      store.getState().setClock('h100:70b');
    });
    await waitFor(() => expect(screen.getByTestId('throughput').textContent).toMatch(/tok\/s modelled h100:70b$/), { timeout: 3000 });
    expect(screen.getByTestId('tpot').textContent).toBe('10.0 / 12.0 ms wall clock');
    // The steps reach the summary through its throttle, after the clock's label.
    await waitFor(() => expect(screen.getByTestId('step-time').textContent).toMatch(/^draft \d+\.\d\d · verify \d+\.\d\d ms modelled h100:70b$/), { timeout: 3000 });
  });

  it('says when K_max or τ changed part-way through a run', async () => {
    const { store } = renderWithStudio(<MetricsChart />);
    const metrics = { policy: 'echo', steps: 2, requests: 1, generatedTokens: 6, wallMs: 100, throughput: 60, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 10 };
    const retuned = sampleRequest({ gates: [{ depth: 0, confidence: 0.9, tau: 0.35, pass: true }] });
    act(() => store.getState().ingest({ ...frameOf(sampleStep(0, [sampleRequest()]), sampleStep(1, [retuned], { kmax: 32 })), metrics }));
    await waitFor(() => expect(screen.getByTestId('run-changed').textContent).toBe(' · changed mid-run: K_max 16 → 32, τ at depth 0 0.3 → 0.35'), { timeout: 3000 });
  });

  it('names the draft attention window of a run started with one', async () => {
    const { store } = renderWithStudio(<MetricsChart />);
    const metrics = { policy: 'echo', steps: 1, requests: 1, generatedTokens: 2, wallMs: 20, throughput: 100, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 10 };
    act(() => store.getState().runStarted({ policy: 'echo', batch: 2, kmax: 16, requests: 4, maxNewTokens: 8, temperature: 0, seed: 1, draftWindow: { sink: 4, recent: 64 } }));
    act(() => store.getState().ingest({ ...frameOf(sampleStep(0, [sampleRequest()])), metrics }));
    await waitFor(() => expect(screen.getByTestId('draft-window').textContent).toBe('4 sink · 64 recent rows'), { timeout: 3000 });
  });
});

describe('GateGrid', () => {
  it('summarises truncations per gated depth over the recent steps', async () => {
    const restore = fakeLayout(400, 260);
    try {
      const { store } = renderWithStudio(<GateGrid />);
      const truncated = sampleRequest({ requestId: '9', gates: [{ depth: 0, confidence: 0.1, tau: 0.3, pass: false }] });
      act(() => store.getState().ingest(frameOf(sampleStep(0, [sampleRequest(), truncated]), sampleStep(1, [sampleRequest(), truncated]))));
      await waitFor(() => expect(screen.getByTestId('gate-summary').textContent).toBe('depth 0: 2/4 truncated · depth 2: 0/2 truncated'));
    } finally {
      restore();
    }
  });
});
