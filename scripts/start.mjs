// `npm start`: builds if needed, then opens the desktop app. Where the Electron binary is
// missing and cannot be fetched (offline installs skip it), says so in one line and serves the
// studio to a browser instead, printing the URL.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAll, isBuildStale } from './build.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const electronDir = path.join(root, 'node_modules', 'electron');
/** One attempt to fetch the binary; offline it fails fast or times out here. */
const FETCH_TIMEOUT_MS = 60_000;

/** The Electron executable when it is installed, else null (never throws, unlike require('electron')). */
export function electronBinary() {
  const pathFile = path.join(electronDir, 'path.txt');
  if (!existsSync(pathFile)) return null;
  const executable = path.join(electronDir, 'dist', readFileSync(pathFile, 'utf8').trim());
  return existsSync(executable) ? executable : null;
}

function tryFetchElectron() {
  const installer = path.join(electronDir, 'install.js');
  if (!existsSync(installer)) return 'the electron package is not installed';
  const env = { ...process.env };
  delete env.ELECTRON_SKIP_BINARY_DOWNLOAD; // its install.js would otherwise do nothing
  const result = spawnSync(process.execPath, [installer], { cwd: electronDir, env, timeout: FETCH_TIMEOUT_MS, encoding: 'utf8' });
  if (result.error?.code === 'ETIMEDOUT') return `download timed out after ${FETCH_TIMEOUT_MS / 1000} s`;
  if (result.status !== 0) {
    const lines = `${result.stderr ?? ''}`.split('\n').map((l) => l.trim()).filter(Boolean);
    const reason = lines.find((l) => /error|fail|ENOTFOUND|ECONN|EAI_AGAIN/i.test(l)) ?? lines[0] ?? `installer exit code ${result.status}`;
    return reason.length > 160 ? `${reason.slice(0, 157)}...` : reason;
  }
  return electronBinary() ? null : 'the installer finished but no binary appeared';
}

async function main() {
  if (isBuildStale()) await buildAll({ quiet: true });

  let executable = electronBinary();
  let whyNot = null;
  if (!executable) {
    whyNot = tryFetchElectron();
    executable = whyNot ? null : electronBinary();
  }

  const passThrough = process.argv.slice(2);
  const child = executable
    ? spawn(executable, [root, ...passThrough], { stdio: 'inherit' })
    : (console.log(`Electron is not available (${whyNot}); serving ECHO Studio to a browser instead.`),
      spawn(process.execPath, [path.join(root, 'bin', 'echo-studio.js'), 'serve', ...passThrough], { stdio: 'inherit' }));
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(signal ? 1 : (code ?? 0)));
}

main().catch((err) => {
  console.error(`npm start failed: ${err.message}`);
  process.exit(1);
});
