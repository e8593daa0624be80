// @vitest-environment happy-dom
// A measured profile as the clock: "a measured profile…" in the clock select asks for a
// profile-hw file and sends clock.profile; the engine host's answer becomes the clock, and the
// metrics and the comparison with a kept run are read under it and labelled with its name.
import { act, cleanup, fireEvent, screen, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { clockFromSpec } from '../../../src/engine/cost/clock.js';
import { stepPoint } from '../../../src/renderer/studio/series.js';
import type { EventOf } from '../../../src/shared/messages.js';
import { MetricsChart } from '../../../src/renderer/views/MetricsChart.js';
import { SAMPLE_CURVES } from '../../shared/fixtures.js';
import { sampleRequest, sampleStep } from '../studio/fixtures.js';
import { renderWithStudio } from './render.js';

afterEach(cleanup);

const frameOf = (...steps: ReturnType<typeof sampleStep>[]) => ({ type: 'frame' as const, steps });

const answer: EventOf<'clock.profile'> = {
  type: 'clock.profile',
  name: 'gpu-box',
  measuredOn: 'Test CPU (cuda)',
  slots: 16,
  ...SAMPLE_CURVES,
};
const metrics = { policy: 'static', steps: 2, requests: 1, generatedTokens: 4, wallMs: 40, throughput: 100, meanAcceptedTokens: 1, meanAcceptanceLength: 2, draftUtilisation: 0.5, verifiedTokensPerStep: 3, acceptancePerPosition: [0.5], paddingWaste: 0, tpotP50Ms: 10, tpotP99Ms: 10 };

describe('a measured profile as the clock', () => {
  it('asks for the file, takes the answer as the clock, and labels metrics and the comparison with it', async () => {
    const { store, sent } = renderWithStudio(<MetricsChart />);
    const select = screen.getByLabelText('clock') as HTMLSelectElement;
    fireEvent.change(select, { target: { value: 'pick-profile' } });
    fireEvent.change(screen.getByLabelText('hardware profile file'), { target: { value: ' profiles/gpu-box.json ' } });
    fireEvent.click(screen.getByRole('button', { name: 'Use profile' }));
    expect(sent).toEqual([{ type: 'clock.profile', path: 'profiles/gpu-box.json' }]);
    // Until the engine host answers, the clock stays what it was.
    expect(select.value).toBe('wall');
    act(() => store.getState().ingest(answer));
    expect(select.value).toBe('profile:gpu-box');
    expect(select.selectedOptions[0].textContent).toBe('measured profile: gpu-box (Test CPU (cuda))');

    const steps = [sampleStep(0, [sampleRequest()]), sampleStep(1, [sampleRequest()])].map((s) => ({ ...s, draftRows: [2, 1], draftRequests: [1, 1] }));
    act(() => store.getState().ingest({ ...frameOf(...steps), metrics }));
    // Priced exactly as `--hw curves --hw-profile gpu-box.json` prices the same steps.
    const clock = clockFromSpec('curves', { target: answer.target, draft: answer.draft, slots: answer.slots });
    const points = steps.map(stepPoint);
    const expected = (points.reduce((n, p) => n + p.emitted, 0) * 1000) / steps.reduce((ms, s) => ms + clock.stepMs(s).totalMs, 0);
    await waitFor(() => expect(screen.getByTestId('throughput').textContent).toMatch(/tok\/s measured profile: gpu-box$/), { timeout: 3000 });
    expect(screen.getByTestId('throughput').querySelector('.clock-tag')?.getAttribute('title')).toBe('draft and verify priced by its measured forwards, acceptance from these models');
    // The chart reads the steps through a throttle (first delivery after about half a second), so
    // the label can show before the steps it prices have arrived.
    await waitFor(() => expect(screen.getByTestId('throughput').textContent).toContain(`${expected.toFixed(1)} tok/s`), { timeout: 3000 });

    fireEvent.click(screen.getByRole('button', { name: 'Keep for comparison' }));
    act(() => store.getState().ingest({ ...frameOf(sampleStep(2, [sampleRequest()])), metrics: { ...metrics, policy: 'echo' } }));
    await waitFor(() => expect(screen.getByTestId('run-comparison').textContent).toMatch(/its throughput measured profile: gpu-box$/), { timeout: 3000 });
  });
});
