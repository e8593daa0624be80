// Layers point down only: shared ← engine ← output ← host ← cli/main; preload on shared; the renderer on
// shared and the engine modules declared pure. The rules live in .dependency-cruiser.cjs and
// dependency-cruiser checks them over every import it parses (static, dynamic, require,
// side-effect, type-only). This script adds what a path rule cannot say: every file in src/
// belongs to a layer (also one that imports nothing), no two engine folders import each other (a
// file at the engine's root counting as its own folder), and every relative import of a
// TypeScript file is written with its `.js` (one style of specifier). Run as a script, it checks
// src/ and exits 1 naming each violation.
import { cruise } from 'dependency-cruiser';
import extractDepcruiseConfig from 'dependency-cruiser/config-utl/extract-depcruise-config';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const LAYERS = ['shared', 'engine', 'output', 'host', 'cli', 'main', 'preload', 'renderer'];

/**
 * The import cycles of a graph (Map node → Map neighbour → why): one per strongly connected group
 * of more than one node (Tarjan), as a shortest way from its first node back to it: [a, …, a].
 */
function cyclesOf(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const groups = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1) groups.push(new Set(group));
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  // One cycle per group: from its first node, a shortest way back to it inside the group.
  return groups.map((group) => {
    const start = [...group].sort()[0];
    const cameFrom = new Map();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift();
      for (const w of [...(graph.get(v)?.keys() ?? [])].sort()) {
        if (!group.has(w) || cameFrom.has(w)) continue;
        cameFrom.set(w, v);
        if (w === start) queue.length = 0;
        else queue.push(w);
      }
    }
    const cycle = [start];
    for (let v = cameFrom.get(start); v !== start; v = cameFrom.get(v)) cycle.unshift(v);
    return [start, ...cycle];
  });
}

/**
 * `imports`: resolved imports [from, to], paths relative to src/. One line per import cycle
 * between the engine's folders (each file at the engine's root counting as its own), naming the
 * imports that close it. Cycles between single modules are dependency-cruiser's rule.
 */
export function engineFolderCycles(imports) {
  const unitOf = (file) => {
    const parts = file.split('/');
    return parts.length > 2 ? `${parts[1]}/` : parts[1];
  };
  const graph = new Map();
  for (const [from, to] of imports) {
    if (!from.startsWith('engine/') || !to.startsWith('engine/')) continue;
    const [a, b] = [unitOf(from), unitOf(to)];
    if (a === b) continue;
    if (!graph.has(a)) graph.set(a, new Map());
    if (!graph.get(a).has(b)) graph.get(a).set(b, `${from.slice('engine/'.length)} imports ${to.slice('engine/'.length)}`);
  }
  return cyclesOf(graph).map((cycle) => {
    const reasons = cycle.slice(1).map((to, i) => graph.get(cycle[i]).get(to));
    return `import cycle between engine folders: ${cycle.join(' → ')} (${reasons.join('; ')})`;
  });
}

/**
 * `modules`: dependency-cruiser's modules. One line per relative import of a TypeScript file in
 * src/ written without the `.js` its compiled form has (`'./tree'` for `'./tree.js'`): every kind of
 * import counts, as dependency-cruiser parses them all, so the specifiers stay one style.
 */
export function specifierLines(modules) {
  const lines = [];
  for (const m of modules) {
    if (!m.source.startsWith('src/')) continue;
    for (const d of m.dependencies) {
      if (!d.module.startsWith('.') || !/\.tsx?$/.test(d.resolved) || d.module.endsWith('.js')) continue;
      lines.push(`${m.source} imports '${d.module}' without its extension: write '${d.module}.js', as every relative import in src/ does [specifier-ends-in-js]`);
    }
  }
  return lines;
}

/**
 * Checks the tree under `root` (its src/, resolved with its tsconfig.json) against the project's
 * rules; returns one line per violation, none when every import points down.
 */
export async function checkLayers(root = PROJECT) {
  const config = await extractDepcruiseConfig(path.join(PROJECT, '.dependency-cruiser.cjs'));
  const tsConfigFile = path.join(root, 'tsconfig.json');
  const cwd = process.cwd();
  // dependency-cruiser names modules relative to the working folder, as its rules' paths expect.
  process.chdir(root);
  let result;
  try {
    result = await cruise(
      ['src'],
      { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden }, tsConfig: { fileName: tsConfigFile } },
      undefined,
      existsSync(tsConfigFile) ? { tsConfig: extractTSConfig(tsConfigFile) } : undefined,
    );
  } finally {
    process.chdir(cwd);
  }
  const { modules, summary } = result.output;
  const why = new Map(config.forbidden.map((rule) => [rule.name, rule.comment]));
  const lines = summary.violations.map((v) => {
    const cycle = v.cycle ? ` (${[v.from, ...v.cycle.map((c) => c.name)].join(' → ')})` : '';
    return `${v.from} imports ${v.to}: ${why.get(v.rule.name)}${cycle} [${v.rule.name}]`;
  });
  const inSrc = (name) => name.startsWith('src/');
  for (const m of modules) {
    if (inSrc(m.source) && !LAYERS.includes(m.source.split('/')[1]) && m.dependencies.length === 0) {
      lines.push(`no-unknown-layer: ${m.source} is in no layer (src/${LAYERS.join(', src/')})`);
    }
  }
  const imports = modules.flatMap((m) =>
    m.dependencies.filter((d) => inSrc(m.source) && inSrc(d.resolved)).map((d) => [m.source.slice(4), d.resolved.slice(4)]),
  );
  lines.push(...engineFolderCycles(imports));
  lines.push(...specifierLines(modules));
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const violations = await checkLayers();
  for (const line of violations) console.error(line);
  if (violations.length > 0) {
    console.error('the rules and why: .dependency-cruiser.cjs and docs/architecture.md ("Layers")');
    process.exit(1);
  }
  console.log("layers: every import in src/ points down (dependency-cruiser), no engine folders import each other, and every relative import names its '.js'");
}
