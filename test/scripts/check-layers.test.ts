import { describe, expect, it } from 'vitest';
import { engineCycles, layerViolations } from '../../scripts/check-layers.mjs';

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

describe('engine import cycles', () => {
  it('names modules that import each other, and folders that do (through a file at the root)', () => {
    expect(
      engineCycles([
        ['engine/policy/types.ts', "import type { VerifyCost } from './echo-scheduler';"],
        ['engine/policy/echo-scheduler.ts', "import type { SpeculationPolicy } from './types';\nimport { acceptanceAt } from '../calibrate/acceptance';"],
        ['engine/calibrate/acceptance.ts', "export const x = 1;"],
        ['engine/calibrate/warmup.ts', "import { Runner } from '../runner';"],
        ['engine/runner.ts', "import { createPolicy } from './policy/index.js';"],
        ['engine/policy/index.ts', "export type { StepContext } from './types';"],
      ]),
    ).toEqual([
      'import cycle in the engine: policy/echo-scheduler.ts → policy/types.ts → policy/echo-scheduler.ts',
      'import cycle between engine folders: calibrate/ → runner.ts → policy/ → calibrate/ ' +
        '(calibrate/warmup.ts imports ../runner; runner.ts imports ./policy/index.js; policy/echo-scheduler.ts imports ../calibrate/acceptance)',
    ]);
    expect(
      engineCycles([
        ['engine/policy/types.ts', "import type { AcceptanceTable } from '../calibrate/acceptance';"],
        ['engine/calibrate/acceptance.ts', "export const x = 1;"],
        ['engine/calibrate/warmup.ts', "import { Runner } from '../runner.js';"],
        ['engine/runner.ts', "import type { SpeculationPolicy } from './policy/types';"],
        ['engine/step.ts', "import { prefill } from './prefill';"],
      ]),
    ).toEqual([
      'import cycle between engine folders: calibrate/ → runner.ts → policy/ → calibrate/ ' +
        '(calibrate/warmup.ts imports ../runner.js; runner.ts imports ./policy/types; policy/types.ts imports ../calibrate/acceptance)',
    ]);
  });

  it('lets engine modules import down, whatever the folder', () => {
    expect(
      engineCycles([
        ['engine/step.ts', "import { driveStep } from './policy/drive';\nimport { draftLayer } from './draft/drafter';"],
        ['engine/policy/drive.ts', "import type { SpeculationPolicy } from './types';\nimport { recordLayerConfidences } from '../draft/confidence';"],
        ['engine/policy/types.ts', "import type { DraftTree } from '../tree';"],
        ['engine/draft/confidence.ts', "import type { DraftTree } from '../tree';"],
        ['engine/tree.ts', "import type { GrantKind } from '../shared/events';"],
      ]),
    ).toEqual([]);
  });
});
