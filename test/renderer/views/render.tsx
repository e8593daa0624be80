// Renders studio views with a fresh store and a recording send, for component tests.
import { render } from '@testing-library/react';
import type { ReactElement } from 'react';
import type { EngineRequest } from '../../../src/shared/messages.js';
import { createStudioStore } from '../../../src/renderer/studio/store.js';
import { StudioProvider } from '../../../src/renderer/views/StudioContext.js';

export function renderWithStudio(ui: ReactElement, send?: (request: EngineRequest) => void) {
  const store = createStudioStore();
  const sent: EngineRequest[] = [];
  const result = render(
    <StudioProvider
      store={store}
      send={(request) => {
        sent.push(request);
        send?.(request);
      }}
    >
      {ui}
    </StudioProvider>,
  );
  return { ...result, store, sent };
}

/** happy-dom has no layout; give every element a size so charts and overlays render. */
export function fakeLayout(width = 400, height = 300): () => void {
  const original = HTMLElement.prototype.getBoundingClientRect;
  HTMLElement.prototype.getBoundingClientRect = function () {
    return { x: 0, y: 0, left: 0, top: 0, right: width, bottom: height, width, height, toJSON: () => ({}) } as DOMRect;
  };
  return () => {
    HTMLElement.prototype.getBoundingClientRect = original;
  };
}
