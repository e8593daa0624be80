import { describe, expect, it } from 'vitest';
import { layerViolations } from '../../scripts/check-layers.mjs';

describe('layer check', () => {
  it('names an engine module that imports the host, and a shared module that imports the engine', () => {
    const violations = layerViolations([
      ['engine/session-run.ts', "import { findPackageRoot } from '../host/paths.js';\nimport { x } from './tree.js';"],
      ['shared/config.ts', "export { y } from '../engine/tree.js';"],
      ['renderer/App.tsx', "const m = await import('../host/web-host.js');"],
    ]);
    expect(violations).toEqual([
      'engine/session-run.ts imports ../host/paths.js: engine may import only shared, engine',
      'shared/config.ts imports ../engine/tree.js: shared may import only shared',
      'renderer/App.tsx imports ../host/web-host.js: renderer may import only shared, engine, renderer',
    ]);
  });

  it('lets imports point down or stay within a layer', () => {
    expect(
      layerViolations([
        ['cli/commands/run.ts', "import { a } from '../../engine/runner.js';\nimport { b } from '../../host/paths.js';\nimport { c } from '../flags.js';"],
        ['host/paths.ts', "export { findPackageRoot } from '../engine/package-root.js';"],
        ['renderer/views/MetricsChart.tsx', "import { clockFromSpec } from '../../engine/cost/clock';"],
      ]),
    ).toEqual([]);
  });
});
