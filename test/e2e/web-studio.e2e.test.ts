// End to end: the real web host (engine host child included) serves the real renderer build to
// headless Chromium; the page must connect and show what the engine host reports.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/host/paths.js';
import { startWebHost, type WebHost } from '../../src/host/web-host.js';
import { missingBuild, paths, repoRoot, writeModelsFolder } from '../host/helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const skipReason = !existsSync(CHROMIUM)
  ? `${CHROMIUM} is missing (apt-get install chromium; .ci/run does)`
  : !existsSync(path.join(paths.rendererDir, 'index.html'))
    ? 'dist/renderer is missing: run `npm run build` (npm test does)'
    : missingBuild();
if (skipReason) console.warn(`skipping the browser end-to-end test: ${skipReason}`);

const resultsDir = path.join(repoRoot, 'test-results');
let host: WebHost;
let browser: BrowserContext;
let scratch: string;

beforeAll(async () => {
  if (skipReason) return;
  scratch = await mkdtemp(path.join(tmpdir(), 'echo-e2e-'));
  await writeModelsFolder(path.join(scratch, 'models'));
  host = await startWebHost({
    port: 0,
    rendererDir: paths.rendererDir,
    engineHostEntry: paths.engineHostEntry,
    modelsDir: path.join(scratch, 'models'),
    log: () => {},
  });
  // A fresh profile per run: nothing cached from earlier runs or the user's own browser.
  browser = await chromium.launchPersistentContext(path.join(scratch, 'chromium-profile'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});

afterAll(async () => {
  if (skipReason) return;
  await browser?.close();
  await host?.close();
  await rm(scratch, { recursive: true, force: true });
});

describe.skipIf(skipReason !== null)('studio in a browser, served by the web host', () => {
  it('connects to the engine host and shows its version and bundled models', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));

    await page.goto(host.url);
    const connection = page.getByTestId('connection');
    await connection.and(page.locator('[data-state="connected"]')).waitFor({ timeout: 30_000 });
    await expect.poll(() => connection.textContent()).toBe('Connected');

    const version = packageVersion(repoRoot);
    await page.getByTestId('engine-version').getByText(`v${version}`).waitFor();
    // The engine card starts folded (the run's knobs need the room); its toggle opens it.
    await page.getByRole('button', { name: 'show Engine' }).click();
    const models = page.getByTestId('models').locator('li');
    await models.nth(1).waitFor();
    expect(await models.locator('.model-name').allTextContents()).toEqual(['echo-draft', 'echo-target']);
    expect(await models.locator('.model-params').allTextContents()).toEqual(['64.1K params', '2.0M params']);
    expect(await page.getByTestId('engine-provider').textContent()).toContain('cpu');

    for (const panel of ['engine', 'run', 'super-tree', 'request', 'histograms', 'gates', 'budget', 'metrics']) {
      expect(await page.locator(`[data-panel="${panel}"]`).count(), panel).toBe(1);
    }

    expect(problems, 'console errors or CSP violations').toEqual([]);

    await mkdir(resultsDir, { recursive: true });
    const shot = path.join(resultsDir, 'studio-web.png');
    await page.screenshot({ path: shot });
    await page.close();
  });

  it('shows an engine host crash as an error, and the restarted host as connected again', async () => {
    const page = await browser.newPage();
    await page.goto(host.url);
    await page.locator('[data-testid="connection"][data-state="connected"]').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'show Engine' }).click();
    await page.getByTestId('models').waitFor();
    const firstPid = host.enginePid();
    expect(firstPid).toBeTypeOf('number');
    process.kill(firstPid as number, 'SIGKILL');
    const banner = page.getByTestId('errors');
    await banner.getByText(/the engine host stopped \(signal SIGKILL\); restarting it/).waitFor({ timeout: 30_000 });
    await expect.poll(() => host.enginePid()).not.toBe(firstPid);
    // The restarted host answers the web host's hello; the page keeps its link and its status.
    await page.getByTestId('models').locator('li').nth(1).waitFor();
    expect(await page.getByTestId('connection').getAttribute('data-state')).toBe('connected');
    await page.close();
  });

  it('refuses the page without the token', async () => {
    await browser.clearCookies(); // the first test's visit left the access cookie behind
    const page = await browser.newPage();
    const response = await page.goto(`http://127.0.0.1:${host.port}/`);
    expect(response?.status()).toBe(403);
    expect(await page.textContent('body')).toContain('access token');
    await page.close();
  });
});
