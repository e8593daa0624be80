// Renders assets/icon.svg to assets/icon.png (512×512) with the system Chromium; the PNG is
// what electron-builder turns into the platform icons. A maintainer's step: the PNG is committed.
// Usage: node scripts/make-icon.mjs [path-to-chromium]
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const executablePath = process.argv[2] ?? '/usr/bin/chromium';
const svg = readFileSync(path.join(root, 'assets', 'icon.svg'), 'utf8');

const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage({ viewport: { width: 512, height: 512 } });
  await page.setContent(`<!doctype html><style>html,body{margin:0;background:transparent}</style>${svg}`);
  await page.locator('svg').screenshot({ path: path.join(root, 'assets', 'icon.png'), omitBackground: true });
  console.log('wrote assets/icon.png');
} finally {
  await browser.close();
}
