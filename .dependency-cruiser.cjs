// The project's layer rules, checked by dependency-cruiser (it parses every import: static,
// dynamic `import()`, `require`, side-effect and type-only ones). `npm test` runs them through
// scripts/check-layers.mjs, which adds one rule a path pattern cannot say (no import cycle between
// the engine's folders); `npx depcruise src` runs these alone. docs/architecture.md explains them.
//
// Layers, lowest first: shared ← engine ← output ← host ← cli and main. preload sits on shared; the
// renderer on shared and the engine modules declared pure below. Nothing imports the renderer, cli or main.

/** Engine modules the renderer may import: no Node built-ins, no onnxruntime, nothing impure below. */
const PURE_ENGINE = ['src/engine/cost/clock\\.ts$', 'src/engine/cost/roofline\\.ts$', 'src/engine/cost/knee\\.ts$'];
const LAYERS = ['shared', 'engine', 'output', 'host', 'cli', 'main', 'preload', 'renderer'];

/** A rule: modules of layer `from` may import only from the layers in `may`. */
function layer(from, may) {
  const others = LAYERS.filter((name) => !may.includes(name) && name !== from);
  return {
    name: `${from}-points-down`,
    severity: 'error',
    comment: `${from} may import only from ${[from, ...may].join(', ')}`,
    from: { path: `^src/${from}/` },
    to: { path: `^src/(${others.join('|')})/` },
  };
}

module.exports = {
  forbidden: [
    layer('shared', []),
    layer('engine', ['shared']),
    layer('output', ['shared', 'engine']),
    layer('host', ['shared', 'engine', 'output']),
    layer('cli', ['shared', 'engine', 'output', 'host']),
    layer('main', ['shared', 'engine', 'host']),
    layer('preload', ['shared']),
    layer('renderer', ['shared', 'engine']),
    {
      name: 'renderer-uses-pure-engine-only',
      severity: 'error',
      comment: 'the renderer runs in a sandboxed page: it may import only the engine modules declared pure',
      from: { path: '^src/renderer/' },
      to: { path: '^src/engine/', pathNot: PURE_ENGINE },
    },
    {
      name: 'faces-use-the-door',
      severity: 'error',
      comment: 'the hosts, the CLI, Electron main and the output layer reach the engine through its one door, src/engine/index.ts (run/run.ts is the run facade behind it)',
      from: { path: '^src/(output|host|cli|main)/' },
      to: { path: '^src/engine/', pathNot: '^src/engine/index\\.ts$' },
    },
    {
      name: 'faces-use-the-output-door',
      severity: 'error',
      comment: 'the hosts and the CLI reach the output layer (reports, trace exports) through its one door, src/output/index.ts',
      from: { path: '^src/(host|cli)/' },
      to: { path: '^src/output/', pathNot: '^src/output/index\\.ts$' },
    },
    {
      name: 'pure-engine-stays-pure',
      severity: 'error',
      comment: 'a module the renderer imports may import only shared types and other pure engine modules',
      from: { path: PURE_ENGINE },
      to: { pathNot: ['^src/shared/', ...PURE_ENGINE] },
    },
    {
      name: 'no-unknown-layer',
      severity: 'error',
      comment: `every source file belongs to a layer (src/${LAYERS.join(', src/')}); a new top-level folder needs a rule first`,
      from: { path: '^src/', pathNot: `^src/(${LAYERS.join('|')})/` },
      to: {},
    },
    {
      name: 'no-electron-below-main',
      severity: 'error',
      comment: 'only Electron main and the preload may import electron; the engine and the hosts run under plain Node',
      from: { path: '^src/', pathNot: '^src/(main|preload)/' },
      to: { path: '^electron$|node_modules/electron/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'runtime-needs-dependencies',
      severity: 'error',
      comment: 'code that runs under Node (not bundled into the renderer) may use only package.json dependencies at run time; devDependencies are for the build, the renderer bundle and types',
      from: { path: '^src/(shared|engine|output|host|cli)/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-undeclared-package',
      severity: 'error',
      comment: 'every package imported is declared in package.json',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'no-engine-cycles',
      severity: 'error',
      comment: 'the engine has no import cycle between its modules',
      from: { path: '^src/engine/' },
      to: { circular: true },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      comment: 'every import resolves to a file or an installed package',
      from: { path: '^src/' },
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/renderer/public/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.mts', '.js', '.mjs', '.json'] },
  },
};
