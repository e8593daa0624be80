#!/usr/bin/env node
// Launcher for the echo-studio CLI: runs the built dist/cli/main.js, building it first when
// this is a fresh checkout without dist/.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'dist', 'cli', 'main.js');
if (!existsSync(entry)) {
  const buildScript = path.join(root, 'scripts', 'build.mjs');
  if (!existsSync(buildScript)) {
    console.error('echo-studio: dist/cli/main.js is missing and there is no build script to make it');
    process.exit(1);
  }
  const result = spawnSync(process.execPath, [buildScript], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (result.status !== 0) {
    console.error('echo-studio: building dist/ failed (run `npm run build` to see why)');
    process.exit(1);
  }
}
await import(pathToFileURL(entry).href);
