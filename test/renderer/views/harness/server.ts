// Serves the harness page. 'dev' runs Vite's dev server (no build step; React's development
// build) for the visual check; 'production' builds the page once and serves the built files, so
// the benchmark measures what users run.
import react from '@vitejs/plugin-react';
import { join } from 'node:path';
import { build, createServer, preview, type Plugin } from 'vite';
import { CONTENT_SECURITY_POLICY } from '../../../../src/host/security.js';

/** The production page carries the app's Content-Security-Policy, so a view that breaks it shows. */
function contentSecurityPolicy(): Plugin {
  return {
    name: 'harness-csp',
    apply: 'build',
    transformIndexHtml: (html) =>
      html.replace('<head>', `<head>\n    <meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}" />`),
  };
}

export type HarnessMode = 'dev' | 'production';

/** Starts the harness server; `repo` is the repository root (paths do not rely on the bundle's location). */
export async function startHarness(mode: HarnessMode = 'dev', repo = process.cwd()): Promise<{ url: string; close(): Promise<void> }> {
  const root = join(repo, 'test/renderer/views/harness');
  const publicDir = join(repo, 'src/renderer/public');
  if (mode === 'production') {
    const outDir = join(repo, 'node_modules/.cache/studio-harness');
    await build({ root, configFile: false, logLevel: 'error', plugins: [react(), contentSecurityPolicy()], publicDir, base: './', build: { outDir, emptyOutDir: true, minify: process.env.HARNESS_MINIFY !== '0' } });
    const server = await preview({ root, configFile: false, logLevel: 'error', build: { outDir }, preview: { host: '127.0.0.1', port: 0 } });
    const address = server.httpServer.address();
    if (address === null || typeof address === 'string') throw new Error('harness preview server has no port');
    return { url: `http://127.0.0.1:${address.port}/`, close: () => server.close() };
  }
  const server = await createServer({
    root,
    configFile: false,
    logLevel: 'error',
    plugins: [react()],
    server: { host: '127.0.0.1', port: 0, strictPort: false, fs: { allow: [repo] }, hmr: false },
    publicDir,
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (address === null || address === undefined || typeof address === 'string') throw new Error('harness server has no port');
  return { url: `http://127.0.0.1:${address.port}/`, close: () => server.close() };
}
