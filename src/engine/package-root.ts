// The package's own root and version, whether running from src/ (tests), dist/ (CLI, web host) or
// an Electron app.asar: walk up from the calling module to the folder holding our package.json.
// In the engine because it finds the bundled models; the host re-exports it.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PACKAGE_NAME = 'echo-studio';

export function findPackageRoot(fromModuleUrl: string): string {
  let dir = path.dirname(fileURLToPath(fromModuleUrl));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown };
        if (pkg.name === PACKAGE_NAME) return dir;
      } catch {
        // an unreadable manifest is not ours; keep walking
      }
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`cannot find the ${PACKAGE_NAME} package root above ${fromModuleUrl}`);
    dir = parent;
  }
}

export function packageVersion(root: string): string {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : '0.0.0';
}
