// The desktop package's configuration, checked the way electron-builder itself checks it, without
// the Electron binary that packing needs (it cannot be downloaded here): the YAML against
// electron-builder's schema, package.json against its metadata rules, what each configured
// target needs before it builds, and that every file the configuration names exists after a build.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
const root = path.resolve(__dirname, '../..');
// electron-builder exports neither its config loader nor its checks; these are the modules its CLI
// runs (app-builder-lib, pinned by the lockfile).
const { getConfig, validateConfiguration } = require('app-builder-lib/out/util/config/config.js');
const { checkMetadata } = require('app-builder-lib/out/util/packageMetadata.js');
const { DebugLogger } = require('builder-util');

type Target = string | { target: string };
interface BuilderConfig {
  extraMetadata?: { main?: string };
  /** As loaded: patterns grouped into filter sets. */
  files?: Array<string | { filter?: string[] }>;
  asarUnpack?: string[];
  afterPack?: string;
  linux?: { target?: Target[]; icon?: string };
  mac?: { icon?: string };
  win?: { icon?: string };
  deb?: { maintainer?: string };
}

const packageJson = require(path.join(root, 'package.json'));
let config: BuilderConfig;

beforeAll(async () => {
  config = await getConfig(root, null, null);
});

/** The Linux targets electron-builder builds with fpm (FpmTarget). */
const FPM_TARGETS = ['deb', 'rpm', 'sh', 'freebsd', 'pacman', 'apk', 'p5p'];
const targets = (platform?: { target?: Target[] }) => (platform?.target ?? []).map((t) => (typeof t === 'string' ? t : t.target));

describe('electron-builder configuration', () => {
  it('passes electron-builder’s own schema and package.json checks', async () => {
    await expect(validateConfiguration(config, new DebugLogger(false))).resolves.toBeUndefined();
    expect(() => checkMetadata(packageJson, packageJson, 'package.json', 'package.json')).not.toThrow();
  });

  it('lists no Linux target that electron-builder would refuse for missing metadata', () => {
    // deb and rpm go through fpm, which electron-builder refuses without a project homepage and a
    // maintainer address (the package's author email, or the target's `maintainer`).
    const viaFpm = targets(config.linux).filter((t) => FPM_TARGETS.includes(t));
    for (const target of viaFpm) {
      expect(packageJson.homepage ?? packageJson.repository, `${target} needs a homepage`).toBeDefined();
      expect(config.deb?.maintainer ?? packageJson.author?.email, `${target} needs a maintainer address`).toBeDefined();
    }
    expect(targets(config.linux)).toContain('AppImage');
  });

  it('names files that exist after a build, and keeps native code and models out of the archive', () => {
    expect(config.extraMetadata?.main).toBe(packageJson.main);
    expect(existsSync(path.join(root, packageJson.main)), `${packageJson.main}: run npm run build`).toBe(true);
    for (const icon of [config.linux?.icon, config.mac?.icon, config.win?.icon]) expect(existsSync(path.join(root, icon!)), icon).toBe(true);
    const patterns = (config.files ?? []).flatMap((f) => (typeof f === 'string' ? [f] : (f.filter ?? [])));
    expect(patterns).toEqual(expect.arrayContaining(['dist/**', 'assets/**', 'package.json']));
    // onnxruntime loads its native library and the models with its own file I/O, not through asar.
    expect(config.asarUnpack).toEqual(expect.arrayContaining(['node_modules/onnxruntime-node/**', 'assets/models/**']));
    const hook = require(path.join(root, config.afterPack!));
    expect(typeof hook.default).toBe('function');
  });
});
