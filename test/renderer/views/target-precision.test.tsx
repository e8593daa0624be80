// @vitest-environment happy-dom
// The Run panel's target weights: float32 unless chosen, and a chosen int8 / int4 goes into the
// run config the engine host receives.
import { cleanup, fireEvent, screen } from '@testing-library/react';
import { afterEach, expect, it } from 'vitest';
import { RunPanel } from '../../../src/renderer/views/RunPanel.js';
import { renderWithStudio } from './render.js';

afterEach(cleanup);

it('starts on float32 target weights (nothing sent), and sends int4 when chosen', () => {
  const { sent } = renderWithStudio(<RunPanel />);
  const select = screen.getByLabelText('target weights') as HTMLSelectElement;
  expect(select.value).toBe('float32');
  expect([...select.options].map((o) => o.value)).toEqual(['float32', 'int8', 'int4']);
  fireEvent.click(screen.getByRole('button', { name: 'Start' }));
  expect(sent[0]).toMatchObject({ type: 'run.start' });
  expect((sent[0] as { config: object }).config).not.toHaveProperty('targetPrecision');
  fireEvent.change(select, { target: { value: 'int4' } });
  fireEvent.click(screen.getByRole('button', { name: 'Start' }));
  expect(sent[1]).toMatchObject({ type: 'run.start', config: { targetPrecision: 'int4' } });
});
