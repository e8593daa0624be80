// Serves the harness page with Vite (dev mode: no build step) for the visual check and benchmark.
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { createServer } from 'vite';

export async function startHarness(): Promise<{ url: string; close(): Promise<void> }> {
  const root = fileURLToPath(new URL('.', import.meta.url));
  const repo = fileURLToPath(new URL('../../../../', import.meta.url));
  const server = await createServer({
    root,
    configFile: false,
    logLevel: 'error',
    plugins: [react()],
    server: { host: '127.0.0.1', port: 0, strictPort: false, fs: { allow: [repo] }, hmr: false },
    publicDir: fileURLToPath(new URL('../../../../src/renderer/public', import.meta.url)),
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (address === null || address === undefined || typeof address === 'string') throw new Error('harness server has no port');
  return { url: `http://127.0.0.1:${address.port}/`, close: () => server.close() };
}
