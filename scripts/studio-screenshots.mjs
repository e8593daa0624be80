// Takes the studio's pictures in docs/: the first view of the web studio at 1366 × 768 (a lecture
// projector) and 1920 × 1080, during a run on the bundled demo pair, paused with a request open.
// Needs the build (`npm run build`) and Chromium (/usr/bin/chromium, or CHROMIUM_PATH).
//   node scripts/studio-screenshots.mjs
// It starts `echo-studio serve` with a scratch data folder, drives the page, and stops both.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SIZES = [
  { width: 1366, height: 768 },
  { width: 1920, height: 1080 },
];

/** Starts `serve` on a free port with a scratch data folder; resolves with its URL once printed. */
function serve(dataDir) {
  const child = spawn(process.execPath, [path.join(root, 'bin', 'echo-studio.js'), 'serve', '--port', '0', '--data-dir', dataDir], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const found = /https?:\/\/\S+token=\S+/.exec(out);
      if (found) resolve(found[0]);
    });
    child.on('exit', (code) => reject(new Error(`serve exited (${code}) before printing its URL`)));
  });
  return { child, url };
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'echo-studio-shots-'));
const server = serve(dataDir);
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
try {
  const url = await server.url;
  const page = await browser.newPage({ viewport: SIZES[0] });
  page.setDefaultTimeout(180_000);
  await page.goto(url);
  await page.locator('[data-testid="connection"][data-state="connected"]').waitFor();
  // A run long enough to outlast the pictures: batch 16, echo with its calibrated τ_d.
  await page.locator('#run-batch').fill('16');
  await page.locator('#run-requests').fill('256');
  await page.locator('#run-maxNewTokens').fill('128');
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  await page.waitForFunction(() => Number(document.querySelector('[data-testid="super-tree-canvas"]')?.getAttribute('data-step') ?? '-1') >= 24);
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await page.locator('[data-testid="run-panel-state"]', { hasText: 'paused' }).waitFor();
  // Open a request, as a reader would, by clicking its tree (the first shelf starts at the top left).
  const canvas = page.getByTestId('super-tree-canvas');
  const box = await canvas.boundingBox();
  if (box) await page.mouse.click(box.x + 30, box.y + 30);
  await page.waitForTimeout(1500);
  for (const size of SIZES) {
    await page.setViewportSize(size);
    // Filling the form scrolled the Run panel; the first view shows every panel from its top.
    await page.evaluate(() => document.querySelectorAll('.panel-body, .column').forEach((el) => el.scrollTo(0, 0)));
    await page.waitForTimeout(1500);
    const file = path.join(root, 'docs', `studio-${size.width}x${size.height}.png`);
    await page.screenshot({ path: file });
    console.log(`wrote ${path.relative(root, file)}`);
  }
  await page.getByRole('button', { name: 'Stop', exact: true }).click();
} finally {
  await browser.close();
  server.child.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
}
