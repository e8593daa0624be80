// The real shell and views in headless Chromium, driven by the synthetic stream (batch 64): trees
// and histograms fill, a dragged τ reaches the engine side and comes back in its gate checks, and
// every view is saved as a screenshot under test-results/studio/. Skipped without Chromium.
import { existsSync, mkdirSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, launchChromium } from '../../host/browser.js';
import { startHarness } from './harness/server.js';

const hasChromium = existsSync(CHROMIUM);
const SHOTS = 'test-results/studio';

if (!hasChromium) console.warn(`studio visual check skipped: no Chromium at ${CHROMIUM} (set CHROMIUM_PATH)`);

describe.skipIf(!hasChromium)('studio views in Chromium (synthetic stream)', () => {
  let browser: Browser;
  let page: Page;
  let harness: Awaited<ReturnType<typeof startHarness>>;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    harness = await startHarness();
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1680, height: 1050 } });
    page.setDefaultTimeout(90_000); // every wait below, under a full test run on two busy cores
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // Generous waits: under a full test run on two cores the first page load can take most of a minute.
    await page.goto(`${harness.url}?batch=64&kmax=512&sps=20`, { timeout: 120_000 });
    await page.waitForSelector('[data-testid="super-tree-canvas"]', { timeout: 120_000 });
    expect(errors).toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await harness?.close();
  });

  it('starts a run from the run panel and fills the Super-Tree and the histograms', async () => {
    await page.getByLabel('batch size').fill('64');
    await page.getByLabel('K_max').fill('512');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="super-tree-canvas"]')?.getAttribute('data-step') ?? '-1') >= 20, null, { timeout: 110_000 });
    const summary = await page.getByTestId('super-tree-summary').textContent();
    expect(summary).toMatch(/64 requests/);
    // The canvas has coloured pixels, not just a background.
    const painted = await page.evaluate(() => {
      const canvas = document.querySelector<HTMLCanvasElement>('[data-testid="super-tree-canvas"]');
      const ctx = canvas?.getContext('2d');
      if (!canvas || !ctx) return 0;
      const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n += 1;
      return n;
    });
    expect(painted).toBeGreaterThan(1000);
    await page.waitForSelector('[data-testid="histogram-0"]');
    expect(Number(await page.getByTestId('histogram-0').getAttribute('data-samples'))).toBeGreaterThan(50);
  });

  it('sends a dragged τ as knobs.set and sees the engine use it', async () => {
    const line = page.getByTestId('tau-line-2');
    await line.scrollIntoViewIfNeeded();
    const box = await line.boundingBox();
    if (!box) throw new Error('τ line for depth 2 is not visible');
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 2;
    await page.mouse.move(x, y);
    await page.mouse.down();
    await page.mouse.move(x + 40, y, { steps: 5 });
    await page.mouse.up();
    const sent = await page.evaluate(() => {
      const w = window as unknown as { __studio: { transport: { sent: Array<{ type: string; knobs?: { taus?: Record<string, number> } }> } } };
      return w.__studio.transport.sent.filter((r) => r.type === 'knobs.set').at(-1)?.knobs?.taus?.['2'];
    });
    expect(sent).toBeGreaterThan(0.35);
    await page.waitForFunction(
      (tau) => document.querySelector('[data-testid="engine-tau-2"]')?.textContent?.includes(`τ ${tau.toFixed(2)}`) ?? false,
      sent as number,
      { timeout: 60_000 },
    );
  });

  it('opens a request from the Super-Tree and explains its step', async () => {
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    await page.waitForSelector('[data-testid="run-panel-state"]:has-text("paused")');
    const canvas = page.getByTestId('super-tree-canvas');
    const box = await canvas.boundingBox();
    if (!box) throw new Error('no Super-Tree canvas');
    await page.mouse.click(box.x + 30, box.y + 30);
    await page.waitForSelector('svg.request-tree');
    expect(await page.locator('svg.request-tree [data-state="accepted"]').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('decisions').textContent()).toMatch(/accepted \d+ of \d+ verified draft token/);
  });

  it('saves a screenshot of each view', async () => {
    await page.screenshot({ path: `${SHOTS}/studio.png` });
    for (const panel of ['run', 'super-tree', 'request', 'histograms', 'gates', 'budget', 'metrics']) {
      const locator = page.locator(`[data-panel="${panel}"]`);
      await locator.scrollIntoViewIfNeeded();
      await locator.screenshot({ path: `${SHOTS}/${panel}.png` });
    }
    expect(existsSync(`${SHOTS}/super-tree.png`)).toBe(true);
  });
});
