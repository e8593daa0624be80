// Renderer entry: pick the transport for this host, create the stores, wire them, render.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { createConnectionStore } from './shell/connection-store.js';
import { wireTransport } from './shell/wire.js';
import { createStudioStore } from './studio/store.js';
import { pickTransport } from './transport/index.js';
import './styles.css';

const rootElement = document.getElementById('root');
if (!rootElement) throw new Error('index.html has no #root element');

const transport = pickTransport(window);
const studio = createStudioStore();
const connection = createConnectionStore(transport.kind);
wireTransport(transport, studio, connection);

createRoot(rootElement).render(
  <StrictMode>
    <App studio={studio} connection={connection} transport={transport} />
  </StrictMode>,
);
