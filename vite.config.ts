// Builds the renderer (src/renderer) into dist/renderer. The same build is loaded by Electron
// (app:// protocol) and served by the web host, so asset paths are relative and the
// Content-Security-Policy is a <meta> tag both hosts honour (only in builds: the dev server
// injects inline scripts for hot reload).
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { CONTENT_SECURITY_POLICY } from './src/host/security.js';

function contentSecurityPolicy(): Plugin {
  return {
    name: 'echo-studio-csp',
    apply: 'build',
    transformIndexHtml(html) {
      return html.replace(
        '<head>',
        `<head>\n    <meta http-equiv="Content-Security-Policy" content="${CONTENT_SECURITY_POLICY}" />`,
      );
    },
  };
}

export default defineConfig({
  root: fileURLToPath(new URL('./src/renderer', import.meta.url)),
  base: './',
  plugins: [react(), contentSecurityPolicy()],
  // The socket worker is an ES module worker (imports shared code), loaded from the app's origin.
  worker: { format: 'es' },
  build: {
    outDir: fileURLToPath(new URL('./dist/renderer', import.meta.url)),
    emptyOutDir: true,
    sourcemap: true,
    chunkSizeWarningLimit: 2048,
  },
});
