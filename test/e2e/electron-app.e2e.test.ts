// End to end in the desktop app: Electron main starts the engine host as a utilityProcess and
// hands the renderer a MessagePort to it. Needs the Electron binary, which offline installs skip
// (ELECTRON_SKIP_BINARY_DOWNLOAD=1); the test says so and skips then.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { _electron as electron, type ElectronApplication } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/host/paths.js';
import { missingBuild, repoRoot } from '../host/helpers.js';

function electronBinary(): string | null {
  const dir = path.join(repoRoot, 'node_modules', 'electron');
  const pathFile = path.join(dir, 'path.txt');
  if (!existsSync(pathFile)) return null;
  const executable = path.join(dir, 'dist', readFileSync(pathFile, 'utf8').trim());
  return existsSync(executable) ? executable : null;
}

const executable = electronBinary();
const skipReason = !executable
  ? 'the Electron binary is not installed (installed with ELECTRON_SKIP_BINARY_DOWNLOAD=1; `npm start` tries to fetch it)'
  : !existsSync(path.join(repoRoot, 'dist', 'main', 'main.js'))
    ? 'dist/main is missing: run `npm run build` (npm test does)'
    : missingBuild();
if (skipReason) console.warn(`skipping the Electron end-to-end test: ${skipReason}`);

let app: ElectronApplication;

beforeAll(async () => {
  if (skipReason || !executable) return;
  const args = [repoRoot];
  // Chromium refuses to run as root with its sandbox on (CI containers).
  if (process.getuid?.() === 0) args.unshift('--no-sandbox');
  app = await electron.launch({ executablePath: executable, args, env: { ...process.env, ELECTRON_ENABLE_LOGGING: '1' } });
});

afterAll(async () => {
  await app?.close();
});

describe.skipIf(skipReason !== null)('desktop app', () => {
  it('opens one window that connects to the engine host over its MessagePort', async () => {
    const page = await app.firstWindow();
    expect(page.url()).toBe('app://studio/index.html');
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor({ timeout: 60_000 });
    await page.getByTestId('engine-version').getByText(`v${packageVersion(repoRoot)}`).waitFor();
    // The page is sandboxed: no Node, no ipcRenderer, only the typed bridge.
    const exposed = await page.evaluate(() => ({
      require: typeof (globalThis as { require?: unknown }).require,
      process: typeof (globalThis as { process?: unknown }).process,
      bridge: Object.keys((globalThis as unknown as { echoStudio: object }).echoStudio).sort(),
    }));
    expect(exposed.require).toBe('undefined');
    expect(exposed.process).toBe('undefined');
    expect(exposed.bridge).toContain('runStart');
    expect(exposed.bridge).not.toContain('ipcRenderer');
    // window.open is denied.
    const popups = app.windows().length;
    await page.evaluate(() => window.open('https://example.com'));
    expect(app.windows().length).toBe(popups);
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'studio-electron.png') });
  });
});
