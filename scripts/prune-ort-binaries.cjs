// electron-builder afterPack hook: onnxruntime-node ships native binaries for every platform and
// architecture (~300 MB); keep only the target's. The files filters in electron-builder.yml drop
// other operating systems; this drops other architectures of the target OS.
// (CommonJS: electron-builder require()s hooks.)
const fs = require('node:fs');
const path = require('node:path');

/** electron-builder's Arch enum, by value. */
const ARCH_NAMES = { 0: 'ia32', 1: 'x64', 2: 'armv7l', 3: 'arm64', 4: 'universal' };
const ORT_PLATFORM = { darwin: 'darwin', mas: 'darwin', linux: 'linux', win32: 'win32' };

/** Finds app.asar.unpacked/node_modules/onnxruntime-node/bin below the packed app folder. */
function findOrtBin(dir, depth = 0) {
  if (depth > 6 || !fs.existsSync(dir)) return null;
  const candidate = path.join(dir, 'app.asar.unpacked', 'node_modules', 'onnxruntime-node', 'bin');
  if (fs.existsSync(candidate)) return candidate;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === 'app.asar.unpacked') continue;
    const found = findOrtBin(path.join(dir, entry.name), depth + 1);
    if (found) return found;
  }
  return null;
}

/** Folders under bin/ to delete for a platform/arch (pure; `layout` is {napiDir: {os: [arch]}}). */
function foldersToDrop(layout, platform, arch) {
  const drop = [];
  for (const [napi, systems] of Object.entries(layout)) {
    for (const [os, arches] of Object.entries(systems)) {
      for (const a of arches) {
        const keep = os === platform && (a === arch || arch === 'universal');
        if (!keep) drop.push(path.join(napi, os, a));
      }
    }
  }
  return drop;
}

function readLayout(binDir) {
  const layout = {};
  const dirs = (p) => fs.readdirSync(p, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  for (const napi of dirs(binDir)) {
    layout[napi] = {};
    for (const os of dirs(path.join(binDir, napi))) layout[napi][os] = dirs(path.join(binDir, napi, os));
  }
  return layout;
}

exports.foldersToDrop = foldersToDrop;

exports.default = async function pruneOrtBinaries(context) {
  const platform = ORT_PLATFORM[context.electronPlatformName];
  const arch = ARCH_NAMES[context.arch];
  const binDir = findOrtBin(context.appOutDir);
  if (!platform || !arch || !binDir) {
    console.log(`  • onnxruntime-node binaries: nothing to prune (${context.electronPlatformName}/${arch ?? context.arch})`);
    return;
  }
  const drop = foldersToDrop(readLayout(binDir), platform, arch);
  for (const rel of drop) fs.rmSync(path.join(binDir, rel), { recursive: true, force: true });
  console.log(`  • onnxruntime-node binaries: kept ${platform}/${arch}, dropped ${drop.length} other builds`);
};
