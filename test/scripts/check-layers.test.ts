import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLayers, engineFolderCycles } from '../../scripts/check-layers.mjs';

const scratch: string[] = [];
afterAll(() => scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** A project tree holding `files` (paths relative to src/) and a tsconfig like the project's. */
function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'layers-'));
  scratch.push(root);
  writeFileSync(path.join(root, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'ESNext', moduleResolution: 'Bundler', jsx: 'react-jsx', allowJs: true }, include: ['src'] }));
  for (const [file, source] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, 'src', file)), { recursive: true });
    writeFileSync(path.join(root, 'src', file), source);
  }
  return root;
}

const DOWNWARD = {
  'shared/events.ts': 'export interface StepEvent { step: number }',
  'engine/tree.ts': "import type { StepEvent } from '../shared/events.js';\nexport const ROOT = -1;",
  'engine/cost/clock.ts': "import type { StepEvent } from '../../shared/events.js';\nimport { knee } from './knee.js';\nexport const clock = knee;",
  'engine/cost/knee.ts': 'export const knee = 16;',
  'engine/index.ts': "export { ROOT } from './tree.js';",
  'output/report/report.ts': "import { ROOT } from '../../engine/index.js';\nexport const report = () => String(ROOT);",
  'output/index.ts': "export { report } from './report/report.js';",
  'host/paths.ts': "export { ROOT } from '../engine/index.js';\nexport { report } from '../output/index.js';",
  'cli/commands/run.ts': "import { ROOT } from '../../engine/index.js';\nimport { ROOT as R } from '../../host/paths.js';\nimport { report } from '../../output/index.js';",
  'renderer/views/Chart.tsx': "import { clock } from '../../engine/cost/clock.js';\nexport const Chart = () => clock;",
  'preload/preload.ts': "import type { StepEvent } from '../shared/events.js';",
};

describe('layer check (dependency-cruiser over a real tree)', () => {
  it('passes a tree whose imports all point down', async () => {
    expect(await checkLayers(tree(DOWNWARD))).toEqual([]);
  }, 60_000);

  it('catches side-effect imports, dynamic import(), require, new folders and impure renderer imports', async () => {
    const lines = await checkLayers(
      tree({
        ...DOWNWARD,
        'engine/side-effect.ts': "import '../host/paths.js';",
        'engine/dynamic.ts': "export async function f() { return import('../cli/commands/run.js'); }",
        'engine/required.cjs': "module.exports = require('../main/main.cjs');",
        'main/main.cjs': 'module.exports = 1;',
        'engine/cost/knee.ts': "import { readFileSync } from 'node:fs';\nexport const knee = readFileSync.length;",
        'renderer/App.tsx': "import { ROOT } from '../engine/tree.js';\nexport const App = () => ROOT;",
        'utils/strings.ts': 'export const s = 1;',
        'shared/config.ts': "export { ROOT } from '../engine/tree.js';",
        'host/deep.ts': "import { ROOT } from '../engine/tree.js';\nexport const r = ROOT;",
      }),
    );
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^src\/engine\/side-effect\.ts imports src\/host\/paths\.ts: engine may import only from engine, shared \[engine-points-down\]$/),
        expect.stringMatching(/^src\/engine\/dynamic\.ts imports src\/cli\/commands\/run\.ts: .*\[engine-points-down\]$/),
        expect.stringMatching(/^src\/engine\/required\.cjs imports src\/main\/main\.cjs: .*\[engine-points-down\]$/),
        expect.stringMatching(/^src\/shared\/config\.ts imports src\/engine\/tree\.ts: .*\[shared-points-down\]$/),
        expect.stringMatching(/^src\/renderer\/App\.tsx imports src\/engine\/tree\.ts: .*\[renderer-uses-pure-engine-only\]$/),
        expect.stringMatching(/^src\/engine\/cost\/knee\.ts imports (node:)?fs: .*\[pure-engine-stays-pure\]$/),
        expect.stringMatching(/^src\/host\/deep\.ts imports src\/engine\/tree\.ts: .*\[faces-use-the-door\]$/),
        expect.stringMatching(/^no-unknown-layer: src\/utils\/strings\.ts is in no layer/),
      ]),
    );
  }, 60_000);

  it('keeps every face on its door: the host, the CLI and main on engine/index.ts, whatever the kind of import; the renderer off the door', async () => {
    const lines = await checkLayers(
      tree({
        ...DOWNWARD,
        'engine/trace/index-file.ts': "import { ROOT } from '../tree.js';\nexport class TraceFileIndex { root = ROOT; }",
        'host/trace-handlers.ts': "import type { TraceFileIndex } from '../engine/trace/index-file.js';\nexport type I = TraceFileIndex;",
        'cli/commands/trace.ts': "export const lazy = () => import('../../engine/trace/index-file.js');",
        'cli/commands/old.cjs': "module.exports = require('../../engine/tree.js');",
        'main/main.ts': "import '../engine/tree.js';",
        'renderer/views/Trace.tsx': "import type { ROOT } from '../../engine/index.js';\nexport type R = typeof ROOT;",
      }),
    );
    expect([...lines].sort()).toEqual([
      expect.stringMatching(/^src\/cli\/commands\/old\.cjs imports src\/engine\/tree\.ts: .*\[faces-use-the-door\]$/),
      expect.stringMatching(/^src\/cli\/commands\/trace\.ts imports src\/engine\/trace\/index-file\.ts: .*\[faces-use-the-door\]$/),
      expect.stringMatching(/^src\/host\/trace-handlers\.ts imports src\/engine\/trace\/index-file\.ts: .*\[faces-use-the-door\]$/),
      expect.stringMatching(/^src\/main\/main\.ts imports src\/engine\/tree\.ts: .*\[faces-use-the-door\]$/),
      expect.stringMatching(/^src\/renderer\/views\/Trace\.tsx imports src\/engine\/index\.ts: .*\[renderer-uses-pure-engine-only\]$/),
    ]);
  }, 60_000);

  it('keeps the output layer between the engine and the faces: it reaches the engine by its door, the faces reach it by its own', async () => {
    const lines = await checkLayers(
      tree({
        ...DOWNWARD,
        'engine/report-writer.ts': "import { report } from '../output/index.js';\nexport const r = report;",
        'output/trace/export.ts': "import { ROOT } from '../../engine/tree.js';\nimport { p } from '../../host/paths.js';\nexport const e = [ROOT, p];",
        'host/exports.ts': "import type { e } from '../output/trace/export.js';\nexport type E = typeof e;",
        'cli/commands/trace.ts': "export const lazy = () => import('../../output/trace/export.js');",
        'main/main.ts': "import '../output/index.js';",
      }),
    );
    expect([...lines].sort()).toEqual([
      expect.stringMatching(/^src\/cli\/commands\/trace\.ts imports src\/output\/trace\/export\.ts: .*\[faces-use-the-output-door\]$/),
      expect.stringMatching(/^src\/engine\/report-writer\.ts imports src\/output\/index\.ts: engine may import only from engine, shared \[engine-points-down\]$/),
      expect.stringMatching(/^src\/host\/exports\.ts imports src\/output\/trace\/export\.ts: .*\[faces-use-the-output-door\]$/),
      expect.stringMatching(/^src\/main\/main\.ts imports src\/output\/index\.ts: main may import only from main, shared, engine, host \[main-points-down\]$/),
      expect.stringMatching(/^src\/output\/trace\/export\.ts imports src\/engine\/tree\.ts: .*\[faces-use-the-door\]$/),
      expect.stringMatching(/^src\/output\/trace\/export\.ts imports src\/host\/paths\.ts: output may import only from output, shared, engine \[output-points-down\]$/),
    ]);
  }, 60_000);

  it('keeps devDependencies (the renderer bundle, the build, types) out of code that runs under Node', async () => {
    const root = tree({
      ...DOWNWARD,
      'engine/store.ts': "import { create } from 'zustand';\nimport type { StoreApi } from 'zustand';\nexport const s: StoreApi<number> | typeof create = create;",
      'host/types.ts': "import type { StoreApi } from 'zustand';\nexport type S = StoreApi<number>;",
      'renderer/store.ts': "import { create } from 'zustand';\nexport const useStore = create(() => ({}));",
    });
    writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'fixture', dependencies: {}, devDependencies: { zustand: '*' } }));
    symlinkSync(path.join(__dirname, '..', '..', 'node_modules'), path.join(root, 'node_modules'), 'dir');
    expect(await checkLayers(root)).toEqual([expect.stringMatching(/^src\/engine\/store\.ts imports .*node_modules\/zustand\/.*\[runtime-needs-dependencies\]$/)]);
  }, 60_000);

  it("names a relative import of a TypeScript file written without its '.js', whatever the kind of import", async () => {
    const lines = await checkLayers(
      tree({
        ...DOWNWARD,
        'engine/step.ts': "import { ROOT } from './tree';\nimport type { StepEvent } from '../shared/events.js';\nexport const s = ROOT;",
        'engine/lazy.ts': "export const lazy = () => import('./tree');",
        'engine/effect.ts': "import './cost/knee';",
        'renderer/styles.ts': "import './styles.css';",
        'renderer/styles.css': 'body {}',
      }),
    );
    expect([...lines].sort()).toEqual([
      "src/engine/effect.ts imports './cost/knee' without its extension: write './cost/knee.js', as every relative import in src/ does [specifier-ends-in-js]",
      "src/engine/lazy.ts imports './tree' without its extension: write './tree.js', as every relative import in src/ does [specifier-ends-in-js]",
      "src/engine/step.ts imports './tree' without its extension: write './tree.js', as every relative import in src/ does [specifier-ends-in-js]",
    ]);
  }, 60_000);

  it('names an import cycle between two engine modules', async () => {
    const lines = await checkLayers(
      tree({ ...DOWNWARD, 'engine/policy/a.ts': "import { b } from './b.js';\nexport const a = 1;", 'engine/policy/b.ts': "import { a } from './a.js';\nexport const b = 2;" }),
    );
    expect(lines).toEqual([expect.stringMatching(/^src\/engine\/policy\/a\.ts imports src\/engine\/policy\/b\.ts: .*policy\/a\.ts → .*policy\/b\.ts → .*policy\/a\.ts.*\[no-engine-cycles\]$/)]);
  }, 60_000);
});

describe('engine folder cycles', () => {
  it('names folders that import each other through a file at the root, with the imports that close it', () => {
    expect(
      engineFolderCycles([
        ['engine/calibrate/warmup.ts', 'engine/runner.ts'],
        ['engine/runner.ts', 'engine/policy/index.ts'],
        ['engine/policy/echo-scheduler.ts', 'engine/calibrate/acceptance.ts'],
        ['engine/policy/index.ts', 'engine/policy/types.ts'],
      ]),
    ).toEqual([
      'import cycle between engine folders: calibrate/ → runner.ts → policy/ → calibrate/ ' +
        '(calibrate/warmup.ts imports runner.ts; runner.ts imports policy/index.ts; policy/echo-scheduler.ts imports calibrate/acceptance.ts)',
    ]);
  });

  it('lets engine modules import down, whatever the folder', () => {
    expect(
      engineFolderCycles([
        ['engine/step.ts', 'engine/policy/drive.ts'],
        ['engine/policy/drive.ts', 'engine/draft/confidence.ts'],
        ['engine/draft/confidence.ts', 'engine/tree.ts'],
        ['engine/tree.ts', 'shared/events.ts'],
      ]),
    ).toEqual([]);
  });
});
