// The splitters in Chromium, on the real studio served by the web host (a trace recorded by a short
// run on the tiny pair, replayed): at 1366 × 768 a drag widens the histograms by as much as the
// pointer moved and every main view still fits the screen; the keyboard moves the split between
// the Super-Tree and the request view.
import { mkdirSync } from 'node:fs';
import path, { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startWebHost } from '../../src/host/web-host.js';
import { paths, repoRoot } from './helpers.js';
import { browserSkipReason, browserTestScope, launchChromium } from './browser.js';
import { recordTinyTrace } from './run-fixtures.js';

const skipReason = browserSkipReason();
if (skipReason) console.warn(`skipping the layout browser test: ${skipReason}`);

const scope = browserTestScope('echo-layout-browser-');
const { tmp } = scope;

beforeAll(async () => {
  if (skipReason) return;
  const tracePath = join(tmp.path, 'run.jsonl');
  const { modelsDir } = await recordTinyTrace(tmp.path, tracePath, { policy: 'echo', taus: { '0': 0.02 }, requests: 4, maxNewTokens: 12 });
  scope.web = await startWebHost({ port: 0, rendererDir: paths.rendererDir, engineHostEntry: paths.engineHostEntry, modelsDir, openTrace: tracePath, log: () => {} });
  scope.browser = await launchChromium();
});

describe.skipIf(skipReason !== null)('resizable panels in the browser', () => {
  it('widens the histograms by a drag and still fits 1366×768; keys move the Super-Tree split', async () => {
    const page = await scope.browser!.newPage({ viewport: { width: 1366, height: 768 } });
    page.setDefaultTimeout(90_000);
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(scope.web!.url, { timeout: 120_000 });
    await page.getByTestId('histogram-0').waitFor();

    const histograms = page.locator('[data-panel="histograms"]');
    const before = (await histograms.boundingBox())!;
    const bar = (await page.getByTestId('splitter-right').boundingBox())!;
    const x = bar.x + bar.width / 2;
    const y = bar.y + bar.height / 2;
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(x - 60, y, { steps: 4 });
    await page.mouse.up();
    await expect.poll(async () => (await histograms.boundingBox())!.width - before.width).toBeCloseTo(60, -1);
    for (const panel of ['run', 'super-tree', 'request', 'histograms', 'gates', 'budget', 'metrics']) {
      const box = (await page.locator(`[data-panel="${panel}"]`).boundingBox())!;
      expect(box.x + box.width, `${panel} ends on screen`).toBeLessThanOrEqual(1366 + 1);
      expect(box.y + box.height, `${panel} ends on screen`).toBeLessThanOrEqual(768 + 1);
      expect(box.width, `${panel} has room`).toBeGreaterThan(150);
    }

    const superTree = page.locator('[data-panel="super-tree"]');
    const treeBefore = (await superTree.boundingBox())!.height;
    await page.getByTestId('splitter-super-tree').focus();
    await page.keyboard.press('Shift+ArrowDown');
    await expect.poll(async () => (await superTree.boundingBox())!.height - treeBefore).toBeGreaterThan(50);
    mkdirSync(path.join(repoRoot, 'test-results'), { recursive: true });
    await page.screenshot({ path: path.join(repoRoot, 'test-results', 'studio-resized-1366x768.png') });
    expect(problems).toEqual([]);
    await page.close();
  });
});
