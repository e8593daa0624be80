// The real shell and views, driven by a synthetic stream instead of an engine host. Query
// parameters: batch, kmax, sps (steps per second), autostart=1, decode=main|worker|thin (where frames
// are parsed and validated; thin: the worker also sends older steps of a frame as digests), pace=ms
// (thin: least time between frames; the socket worker's own pacing by default). Exposes window.__studio for
// checks and the benchmark.
import { createRoot } from 'react-dom/client';
import { App } from '../../../../src/renderer/App.js';
import { PANELS } from '../../../../src/renderer/panels.js';
import { createConnectionStore } from '../../../../src/renderer/shell/connection-store.js';
import { wireTransport } from '../../../../src/renderer/shell/wire.js';
import { createStudioStore, type StudioStore } from '../../../../src/renderer/studio/store.js';
import '../../../../src/renderer/styles.css';
import { SyntheticTransport } from './syntheticTransport.js';

const params = new URLSearchParams(window.location.search);
const num = (key: string, fallback: number): number => Number(params.get(key) ?? fallback);
const transport = new SyntheticTransport({
  batch: num('batch', 64),
  kmax: num('kmax', 512),
  stepsPerSecond: num('sps', 30),
  autostart: params.get('autostart') === '1',
  decode: params.get('decode') === 'worker' ? 'worker' : params.get('decode') === 'thin' ? 'thin' : 'main',
  ...(params.has('pace') ? { paceMs: num('pace', 0) } : {}),
});
// views=a,b mounts only those panels' views (the rest show placeholders), to attribute frame cost.
const onlyViews = params.get('views')?.split(',');
if (onlyViews) for (const panel of PANELS) if (!onlyViews.includes(panel.id)) panel.view = undefined;
const studio = createStudioStore();
const connection = createConnectionStore(transport.kind);
wireTransport(transport, studio, connection);
(window as unknown as { __studio: { store: StudioStore; transport: SyntheticTransport } }).__studio = { store: studio, transport };

const root = document.getElementById('root');
if (!root) throw new Error('harness page has no #root');
createRoot(root).render(<App studio={studio} connection={connection} transport={transport} />);
