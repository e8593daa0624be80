// End to end on the real engine: the web host (engine host child included) serves the built
// studio to headless Chromium; the test starts a run on the bundled demo pair from the Run panel,
// waits for the Super-Tree and the histograms to fill, drags τ at a gated depth and waits until
// the engine's own gate checks carry the new τ, then saves a screenshot of every view.
// Until the trained demo pair is under assets/models, a random-weight pair (target and a
// perturbed copy as draft) stands in under the demo pair's names, so the engine path runs now.
// It skips, saying why, while the build, Chromium or the host's run handler is missing.
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUNDLED_DRAFT, BUNDLED_TARGET } from '../../../src/engine/run/session-run.js';
import { writePerturbedPair } from '../../engine/model/fixtures.js';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebHost, type WebHost } from '../../../src/host/web-host.js';
import { missingBuild, paths, repoRoot } from '../../host/helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = path.join(repoRoot, 'test-results', 'studio-engine');
const staticSkip = !existsSync(CHROMIUM)
  ? `${CHROMIUM} is missing`
  : !existsSync(path.join(paths.rendererDir, 'index.html'))
    ? 'dist/renderer is missing: run `npm run build`'
    : missingBuild();
if (staticSkip) console.warn(`skipping the studio end-to-end test on the engine: ${staticSkip}`);

/** A models folder holding a random-weight pair under the demo pair's names. */
function writeStandInPair(root: string): void {
  const targetDir = path.join(root, BUNDLED_TARGET);
  const draftDir = path.join(root, BUNDLED_DRAFT);
  writePerturbedPair(targetDir, draftDir, { seed: 11, hiddenSize: 64, numLayers: 2 }, { noise: 0.25, stream: 99 });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(path.join(targetDir, f), path.join(draftDir, f));
}

const demoPairInstalled = [BUNDLED_DRAFT, BUNDLED_TARGET].every((name) =>
  existsSync(path.join(repoRoot, 'assets', 'models', name, 'model.safetensors')),
);
let standIn: string | null = null;
let host: WebHost;
let browser: Browser;
let page: Page;
/** Set when the running host cannot do what the test needs; later tests skip with it. */
let dynamicSkip: string | null = null;

beforeAll(async () => {
  if (staticSkip) return;
  if (!demoPairInstalled) {
    standIn = mkdtempSync(path.join(tmpdir(), 'echo-studio-e2e-'));
    writeStandInPair(standIn);
    console.warn('the trained demo pair is not under assets/models: running on a random-weight stand-in pair');
  }
  host = await startWebHost({
    port: 0,
    rendererDir: paths.rendererDir,
    engineHostEntry: paths.engineHostEntry,
    ...(standIn ? { modelsDir: standIn } : {}),
    log: () => {},
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  page = await browser.newPage({ viewport: { width: 1680, height: 1050 } });
  await page.goto(host.url);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor({ timeout: 60_000 });
});

afterAll(async () => {
  await browser?.close();
  await host?.close();
  if (standIn) rmSync(standIn, { recursive: true, force: true });
});

describe.skipIf(staticSkip !== null)('studio on the real engine (web host, demo pair)', () => {
  it('starts a run from the Run panel and fills the Super-Tree and the histograms', async (ctx) => {
    await page.locator('[data-testid="models"], [data-testid="no-models"]').first().waitFor({ state: 'attached', timeout: 60_000 });
    const models = await page.getByTestId('models').locator('li').count();
    if (models < 2) {
      dynamicSkip = 'the engine host lists no model pair';
      console.warn(`skipping: ${dynamicSkip}`);
      ctx.skip();
    }
    await page.getByLabel('batch size').fill('16');
    await page.locator('#run-kmax').fill('96');
    // A run far longer than the tests need, so that it outlasts them however fast the pair and
    // the machine are (they drag τ and pause it; a finished run reports no τ); the loading tests
    // below stop it. Long requests rather than many: the studio keeps a row per request.
    await page.getByLabel('requests').fill('1024');
    await page.getByLabel('max new tokens').fill('256');
    await page.getByLabel('policy').selectOption('echo');
    // A gate at the root is checked every step, so a dragged τ shows in the engine's next checks
    // (calibrated τ_d, the default, may gate only deep layers that few steps reach).
    await page.getByLabel('τ_d (depth:τ, …; empty: calibrate first)').fill('0:0.2, 2:0.35');
    // The run's draft reads a bounded past: the window travels from the form to the engine host.
    await page.getByLabel('draft attention window (sink:recent rows; empty: the whole past)').fill('4:64');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    const started = page.waitForFunction(
      () => Number(document.querySelector('[data-testid="super-tree-canvas"]')?.getAttribute('data-step') ?? '-1') >= 5,
      null,
      { timeout: 180_000 },
    );
    const refused = page.getByTestId('errors').waitFor({ timeout: 180_000 });
    const outcome = await Promise.race([started.then(() => 'started' as const), refused.then(() => 'refused' as const)]);
    if (outcome === 'refused') {
      const message = (await page.getByTestId('errors').textContent()) ?? '';
      // A host without a run handler says so (host.ts: "'run.start' is not available in this
      // build: no engine handler is registered for it"); any other error is a failure of the run.
      if (!/is not available in this build: no engine handler is registered/.test(message)) throw new Error(`the run failed: ${message}`);
      dynamicSkip = `the engine host does not run yet: ${message}`;
      console.warn(`skipping: ${dynamicSkip}`);
      ctx.skip();
    }
    await page.locator('[data-testid^="histogram-"]').first().waitFor({ timeout: 120_000 });
    expect(Number(await page.locator('[data-testid^="histogram-"]').first().getAttribute('data-samples'))).toBeGreaterThan(0);
  });

  it('drags τ at a gated depth and sees the engine use it', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    const line = page.locator('[data-testid^="tau-line-"]').first();
    await line.waitFor({ timeout: 120_000 });
    const depth = (await line.getAttribute('data-testid'))?.replace('tau-line-', '') ?? '0';
    const before = Number(await line.getAttribute('aria-valuenow'));
    await line.scrollIntoViewIfNeeded();
    const box = await line.boundingBox();
    if (!box) throw new Error(`τ line at depth ${depth} is not visible`);
    const shift = before < 0.5 ? 40 : -40;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 + shift, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    const after = Number(await line.getAttribute('aria-valuenow'));
    expect(after).not.toBe(before);
    // The engine's next steps report the new τ in their gate checks.
    await page.getByTestId(`engine-tau-${depth}`).getByText(`engine τ ${after.toFixed(2)}`).waitFor({ timeout: 120_000 });
  });

  it('keeps a dragged τ when Apply then changes only K_max', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    const line = page.locator('[data-testid^="tau-line-"]').first();
    const depth = (await line.getAttribute('data-testid'))?.replace('tau-line-', '') ?? '0';
    const dragged = Number(await line.getAttribute('aria-valuenow'));
    const tausField = page.getByLabel('τ_d (depth:τ, …; empty: calibrate first)');
    // The engine's knobs event put the dragged τ in the form.
    await expect.poll(() => tausField.inputValue(), { timeout: 30_000 }).toContain(`${depth}:${dragged}`);
    await page.locator('#run-kmax').fill('112');
    await page.getByRole('button', { name: 'Apply knobs' }).click();
    await page.getByTestId('knobs-note').getByText(/applied/).waitFor({ timeout: 30_000 });
    expect(await tausField.inputValue()).toContain(`${depth}:${dragged}`);
    expect(await page.locator('#run-kmax').inputValue()).toBe('112');
    // The engine's next steps still gate with the dragged τ.
    await page.getByTestId(`engine-tau-${depth}`).getByText(`engine τ ${dragged.toFixed(2)}`).waitFor({ timeout: 60_000 });
  });

  it('raises the batch past the KV slots the run loaded with: the engine reallocates them and runs it', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    await page.getByLabel('batch size').fill('64');
    await page.locator('#run-kmax').fill('128');
    await page.getByRole('button', { name: 'Apply knobs' }).click();
    await page.getByTestId('knobs-note').getByText(/applied/).waitFor({ timeout: 30_000 });
    expect(await page.getByLabel('batch size').inputValue()).toBe('64');
    expect(await page.locator('#run-kmax').inputValue()).toBe('128');
    // The field's range is what the memory plan allows for the pair.
    expect(Number(await page.getByLabel('batch size').getAttribute('max'))).toBeGreaterThanOrEqual(64);
  });

  it('adds a gate with a click on a depth histogram, then removes it', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    const tausField = page.getByLabel('τ_d (depth:τ, …; empty: calibrate first)');
    const before = await tausField.inputValue();
    // A depth the run does not gate yet (the run gates 0 and 2).
    const box = page.getByTestId('chart-box-1');
    await box.waitFor({ timeout: 60_000 });
    await box.scrollIntoViewIfNeeded();
    const rect = await box.boundingBox();
    if (!rect) throw new Error('the depth-1 histogram is not visible');
    // Plot area: left 34 px (y axis), right margin 10 px; click at τ ≈ 0.5.
    await page.mouse.click(rect.x + 34 + (rect.width - 44) * 0.5, rect.y + rect.height / 2);
    await page.getByTestId('tau-line-1').waitFor({ timeout: 30_000 });
    const tau = Number(await page.getByTestId('tau-line-1').getAttribute('aria-valuenow'));
    expect(tau).toBeGreaterThan(0.4);
    expect(tau).toBeLessThan(0.6);
    await expect.poll(() => tausField.inputValue(), { timeout: 30_000 }).toContain(`1:${tau}`);
    await page.getByTestId('remove-gate-1').click();
    await page.getByTestId('tau-line-1').waitFor({ state: 'detached', timeout: 30_000 });
    await expect.poll(() => tausField.inputValue(), { timeout: 30_000 }).toBe(before);
  });

  it('saves a screenshot of each view', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    await page.getByRole('button', { name: 'Pause', exact: true }).click();
    // Open a request by clicking its tree. Where the trees lie depends on the step the run paused at,
    // so a few spots of the canvas are tried, from its top left, until one is a request's.
    const box = await page.getByTestId('super-tree-canvas').boundingBox();
    if (!box) throw new Error('the Super-Tree canvas is not visible');
    const requestTree = page.locator('svg.request-tree');
    const spots = [[30, 30], ...[0.1, 0.3, 0.5, 0.7].flatMap((fy) => [0.1, 0.3, 0.5, 0.7, 0.9].map((fx) => [fx * box.width, fy * box.height]))];
    for (const [x, y] of spots) {
      await page.mouse.click(box.x + x, box.y + y);
      if (await requestTree.waitFor({ timeout: 1_500 }).then(() => true, () => false)) break;
    }
    await requestTree.waitFor({ timeout: 30_000 });
    // Tokens show as text, their ids on hover.
    // (the root always shows; its drafted children may all be collapsed as pruned)
    expect(await page.locator('svg.request-tree g[data-state] title').first().textContent()).toMatch(/^root ".*" · token id \d+/s);
    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'studio.png') });
    for (const panel of ['run', 'super-tree', 'request', 'histograms', 'gates', 'budget', 'metrics']) {
      const locator = page.locator(`[data-panel="${panel}"]`);
      await locator.scrollIntoViewIfNeeded();
      await locator.screenshot({ path: path.join(SHOTS, `${panel}.png`) });
    }
    expect(existsSync(path.join(SHOTS, 'metrics.png'))).toBe(true);
  });
});

describe.skipIf(staticSkip !== null)('the studio on one lecture screen', () => {
  it('shows every main view at once at 1366×768, run controls in reach', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    await page.setViewportSize({ width: 1366, height: 768 });
    // The refused knobs change above is answered; clear its banner for the picture.
    for (const dismiss of await page.locator('.error-dismiss').all()) await dismiss.click();
    // Zoomed into the Super-Tree: request labels and token text show where they can be read.
    await page.getByRole('button', { name: 'zoom in' }).click();
    // The canvas says its zoom once it has drawn at it (SuperTreeCanvas sets data-zoom, then draws).
    await page.waitForFunction(() => document.querySelector('[data-testid="super-tree-canvas"]')?.getAttribute('data-zoom') === '1.50');
    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, 'studio-1366x768.png') });
    // The README's picture: a run on the trained demo pair, never the stand-in pair.
    if (process.env.ECHO_UPDATE_SCREENSHOT === '1' && demoPairInstalled) {
      await copyFile(path.join(SHOTS, 'studio-1366x768.png'), path.join(repoRoot, 'docs', 'screenshot.png'));
    }
    for (const panel of ['run', 'super-tree', 'request', 'histograms', 'gates', 'budget', 'metrics']) {
      const box = await page.locator(`[data-panel="${panel}"]`).boundingBox();
      expect(box, panel).not.toBeNull();
      expect(box!.y + box!.height, `${panel} ends on screen`).toBeLessThanOrEqual(768 + 1);
      expect(box!.x + box!.width, `${panel} ends on screen`).toBeLessThanOrEqual(1366 + 1);
      expect(box!.height, `${panel} has room`).toBeGreaterThan(100);
    }
    for (const name of ['Start', 'Stop']) {
      const button = await page.getByRole('button', { name, exact: true }).boundingBox();
      expect(button!.y + button!.height, `${name} is on screen`).toBeLessThanOrEqual(768);
    }
    await page.getByRole('button', { name: 'fit' }).click();
    await page.setViewportSize({ width: 1680, height: 1050 });
  });
});

describe.skipIf(staticSkip !== null)('loading on the real engine: stop, and sizes refused up front', () => {
  it('stops a run of 1,000,000 requests while it loads', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    const state = page.getByTestId('run-panel-state');
    if ((await state.textContent()) !== 'finished' && (await state.textContent()) !== 'idle') {
      await page.getByRole('button', { name: 'Stop', exact: true }).click();
      await page.locator('[data-testid="run-panel-state"]:text-matches("finished|idle")').waitFor({ timeout: 60_000 });
    }
    await page.getByLabel('requests').fill('1000000');
    // Empty τ_d: the setup calibrates on a warm-up first, so loading lasts long enough to stop.
    await page.getByLabel('τ_d (depth:τ, …; empty: calibrate first)').fill('');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.locator('[data-testid="run-panel-state"]:text-is("loading")').waitFor({ timeout: 30_000 });
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await page.locator('[data-testid="run-panel-state"]:text-is("idle")').waitFor({ timeout: 60_000 });
    // (the banner may still hold the refused knobs change from above)
    const errors = (await page.getByTestId('errors').count()) > 0 ? ((await page.getByTestId('errors').textContent()) ?? '') : '';
    expect(errors).not.toMatch(/run\.stop|cannot start|call stack|the run failed/i);
  });

  it('refuses batch 1024 with K_max 65536 before loading, saying why', async (ctx) => {
    if (dynamicSkip) ctx.skip();
    await page.getByLabel('requests').fill('64');
    await page.getByLabel('batch size').fill('1024');
    await page.locator('#run-kmax').fill('65536');
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await page.getByTestId('errors').getByText(/cannot start the run: 1024 KV slots of \d+ rows .*lower the batch, K_max or max new tokens/).waitFor({ timeout: 30_000 });
  });
});
