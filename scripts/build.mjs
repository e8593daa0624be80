// Builds everything the app, the web host and the CLI run from, into dist/:
//   dist/main/main.js          Electron main (ESM, electron external)
//   dist/preload/preload.cjs   sandboxed preload (CommonJS: sandboxed preloads cannot be ESM)
//   dist/host/engine-host.js   engine host process (ESM)
//   dist/cli/main.js           the echo-studio CLI (ESM)
//   dist/renderer/             the React renderer (vite)
// Usage: node scripts/build.mjs [--if-stale]   (--if-stale: skip when dist is newer than sources)
import { build as esbuild } from 'esbuild';
import { existsSync, readdirSync, statSync, writeFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const stampFile = path.join(dist, '.build-stamp');
const inputs = ['src', 'package.json', 'vite.config.ts', 'scripts/build.mjs'];

function newestMtime(p) {
  if (!existsSync(p)) return 0;
  const stat = statSync(p);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, entry)));
  return newest;
}

/** True when dist is missing or any source is newer than the last complete build. */
export function isBuildStale() {
  if (!existsSync(stampFile)) return true;
  const built = statSync(stampFile).mtimeMs;
  return inputs.some((input) => newestMtime(path.join(root, input)) > built);
}

export async function buildAll({ quiet = false } = {}) {
  const started = Date.now();
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
  const common = {
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
    define: { 'process.env.ECHO_STUDIO_BUILD': JSON.stringify(pkg.version) },
  };
  await Promise.all([
    esbuild({
      ...common,
      entryPoints: ['src/main/main.ts'],
      outfile: 'dist/main/main.js',
      format: 'esm',
      packages: 'external',
      external: ['electron'],
    }),
    esbuild({
      ...common,
      entryPoints: ['src/preload/preload.ts'],
      outfile: 'dist/preload/preload.cjs',
      format: 'cjs',
      // Sandboxed preloads can require only electron and a few built-ins: bundle the rest (zod).
      external: ['electron'],
    }),
    esbuild({
      ...common,
      entryPoints: ['src/host/engine-host.ts'],
      outfile: 'dist/host/engine-host.js',
      format: 'esm',
      packages: 'external',
    }),
    esbuild({
      ...common,
      entryPoints: ['src/cli/main.ts'],
      outfile: 'dist/cli/main.js',
      format: 'esm',
      packages: 'external',
    }),
  ]);
  const { build: viteBuild } = await import('vite');
  await viteBuild({ configFile: path.join(root, 'vite.config.ts'), logLevel: quiet ? 'warn' : 'info' });
  mkdirSync(dist, { recursive: true });
  writeFileSync(stampFile, new Date().toISOString() + '\n');
  if (!quiet) console.log(`built dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

const invokedDirectly = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  const ifStale = process.argv.includes('--if-stale');
  if (ifStale && !isBuildStale()) {
    process.exit(0);
  }
  buildAll().catch((err) => {
    console.error(`build failed: ${err.message}`);
    process.exit(1);
  });
}
