// Where the package's files are: the built entry points, the renderer and the bundled models.
import path from 'node:path';

export { findPackageRoot, packageVersion } from '../engine/index.js';

export interface PackagePaths {
  root: string;
  engineHostEntry: string;
  rendererDir: string;
  modelsDir: string;
}

export function packagePaths(root: string): PackagePaths {
  return {
    root,
    engineHostEntry: path.join(root, 'dist', 'host', 'engine-host.js'),
    rendererDir: path.join(root, 'dist', 'renderer'),
    modelsDir: path.join(root, 'assets', 'models'),
  };
}
