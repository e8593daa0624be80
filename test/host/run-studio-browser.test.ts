// A run started from the studio's Run panel in headless Chromium, served by the real web host and
// engine host (built): the run reaches 'finished' and the views fill — Super-Tree, decisions,
// histograms, metrics — with no error banner and no console errors. Tiny random models, chosen as
// Hugging Face folders, so the test does not depend on the bundled demo pair.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startWebHost } from '../../src/host/web-host.js';
import { browserSkipReason, browserTestScope, launchChromium, openPage } from './browser.js';
import { paths, repoRoot } from './helpers.js';
import { writeTinyPair, type TinyPair } from './run-fixtures.js';

const skipReason = browserSkipReason();
if (skipReason) console.warn(`skipping the studio run browser test: ${skipReason}`);

const scope = browserTestScope('echo-run-browser-');
const { tmp } = scope;
let pair: TinyPair;

beforeAll(async () => {
  if (skipReason) return;
  pair = writeTinyPair(tmp.path);
  const modelsDir = path.join(tmp.path, 'models');
  mkdirSync(modelsDir);
  // The pair and prompts live in the scratch folder: it is the studio's data folder, so the browser may read them.
  scope.web = await startWebHost({ port: 0, rendererDir: paths.rendererDir, engineHostEntry: paths.engineHostEntry, modelsDir, dataDir: tmp.path, log: () => {} });
  scope.browser = await launchChromium();
});

describe.skipIf(skipReason !== null)('a studio run in the browser', () => {
  it('runs from the Run panel to the end and fills the views', async () => {
    const { page, problems } = await openPage(scope.browser!);
    await page.goto(scope.web!.url);
    await page.getByText('Connected').waitFor();

    await page.getByLabel('Hugging Face folders').check();
    await page.fill('#run-draftDir', pair.draftDir);
    await page.getByLabel('prompts file').check();
    await page.fill('#run-targetDir', pair.targetDir);
    await page.fill('#run-promptsFile', pair.promptsFile);
    await page.selectOption('#run-policy', 'echo');
    await page.fill('#run-taus', '0:0.02, 2:0.01');
    await page.fill('#run-batch', '4');
    await page.fill('#run-kmax', '24');
    await page.fill('#run-requests', '8');
    await page.fill('#run-maxNewTokens', '24');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    const state = page.getByTestId('run-panel-state');
    await expect.poll(() => state.textContent(), { timeout: 120_000 }).toBe('finished');

    await expect.poll(() => page.getByTestId('super-tree-summary').textContent()).toMatch(/^step \d+ · \d+ requests?/);
    expect(await page.getByTestId('decisions').locator('li').count()).toBeGreaterThan(0);
    expect(Number(await page.getByTestId('histogram-0').getAttribute('data-samples'))).toBeGreaterThan(0);
    expect(await page.getByTestId('run-metrics').textContent()).not.toBe('');
    expect(await page.getByRole('alert').count()).toBe(0);
    mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'studio-run.png'), fullPage: true });

    // Scrubbing the finished run: trace.seek replays steps 0…N and the views rebuild at step N.
    const slider = page.getByRole('slider', { name: 'step to replay up to' });
    const last = Number(await slider.getAttribute('max'));
    expect(last).toBeGreaterThan(2);
    await slider.focus();
    await page.keyboard.press('Home');
    await expect.poll(() => page.getByTestId('super-tree-summary').textContent(), { timeout: 15_000 }).toMatch(/^step 0 ·/);
    expect(await page.getByTestId('trace-scrubber-step').textContent()).toBe(`step 0 of ${last}`);
    await page.keyboard.press('End');
    await expect.poll(() => page.getByTestId('super-tree-summary').textContent(), { timeout: 15_000 }).toMatch(new RegExp(`^step ${last} ·`));
    expect(await page.getByRole('alert').count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });
});
