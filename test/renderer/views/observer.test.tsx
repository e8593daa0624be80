// @vitest-environment happy-dom
// An observer link (serve's read-only URL): the studio says it only watches, and the panels that
// steer the run are shown with their controls disabled; the controlling link keeps them.
import { act, cleanup, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { App } from '../../../src/renderer/App.js';
import { createConnectionStore } from '../../../src/renderer/shell/connection-store.js';
import { createStudioStore } from '../../../src/renderer/studio/store.js';
import type { Transport } from '../../../src/renderer/transport/types.js';
import type { StatusEvent } from '../../../src/shared/messages.js';

afterEach(cleanup);

const transport: Transport = {
  kind: 'websocket',
  connect() {},
  send() {},
  onEvent: () => () => {},
  onConnection: () => () => {},
  close() {},
};

const status = (access: StatusEvent['access']): StatusEvent => ({
  type: 'status',
  version: '1.0.0',
  bundledModels: [],
  provider: 'cpu',
  runState: 'idle',
  ...(access ? { access } : {}),
});

describe('observer link', () => {
  it('shows "Watching only", disables the Run and Reports panels and offers no trace to open', () => {
    const studio = createStudioStore();
    render(<App studio={studio} connection={createConnectionStore('websocket')} transport={transport} />);
    act(() => studio.getState().ingest(status('observe')));
    expect(screen.getByTestId('observer').textContent).toBe('Watching only');
    const run = screen.getByTestId('read-only-run');
    expect(run.tagName).toBe('FIELDSET');
    expect(run.hasAttribute('disabled')).toBe(true);
    expect(run.querySelector('button')).not.toBeNull(); // its controls are there, under the disabled fieldset
    expect(screen.getByTestId('read-only-reports').hasAttribute('disabled')).toBe(true);
    expect(screen.queryByRole('button', { name: /Open trace/ })).toBeNull();

    act(() => studio.getState().ingest(status('control')));
    expect(screen.queryByTestId('observer')).toBeNull();
    expect(screen.queryByTestId('read-only-run')).toBeNull();
    expect(screen.getByRole('button', { name: /Open trace/ })).not.toBeNull();
  });
});
