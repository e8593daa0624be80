// The splitters in Chromium, on the real studio served by the web host (a trace recorded by a short
// run on the tiny pair, replayed): at 1366 × 768 a drag widens the histograms by as much as the
// pointer moved and every main view still fits the screen; the keyboard moves the split between
// the Super-Tree and the request view.
import { mkdirSync } from 'node:fs';
import path, { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHost, type WebHost } from '../../src/host/web-host.js';
import { tempDir } from '../engine/model/helpers.js';
import { paths, repoRoot } from './helpers.js';
import { browserSkipReason, launchChromium } from './browser.js';
import { recordTinyTrace } from './run-fixtures.js';

const skipReason = browserSkipReason();
if (skipReason) console.warn(`skipping the layout browser test: ${skipReason}`);

const tmp = tempDir('echo-layout-browser-');
const savedCache = process.env.ECHO_STUDIO_CACHE;
let web: WebHost | null = null;
let browser: Browser | null = null;

beforeAll(async () => {
  if (skipReason) return;
  process.env.ECHO_STUDIO_CACHE = join(tmp.path, 'cache');
  const tracePath = join(tmp.path, 'run.jsonl');
  const { modelsDir } = await recordTinyTrace(tmp.path, tracePath, { policy: 'echo', taus: { '0': 0.02 }, requests: 4, maxNewTokens: 12 });
  web = await startWebHost({ port: 0, rendererDir: paths.rendererDir, engineHostEntry: paths.engineHostEntry, modelsDir, openTrace: tracePath, log: () => {} });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await web?.close();
  process.env.ECHO_STUDIO_CACHE = savedCache;
  tmp.cleanup();
});

describe.skipIf(skipReason !== null)('resizable panels in the browser', () => {
  it('widens the histograms by a drag and still fits 1366×768; keys move the Super-Tree split', async () => {
    const page = await browser!.newPage({ viewport: { width: 1366, height: 768 } });
    page.setDefaultTimeout(90_000);
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(String(e)));
    await page.goto(web!.url, { timeout: 120_000 });
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
