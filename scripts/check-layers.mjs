// Layers point down only: shared ← engine ← host ← cli/main. The renderer and preload sit on
// shared (the renderer may also use the engine's pure modules); nothing imports the renderer,
// cli or main. Inside the engine, imports point down too: no module imports itself back through
// others, and no folder (or file at the engine's root) does. Run as a script, it checks src/ and
// exits 1 naming each import that points up and each cycle.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** For each layer, the layers its modules may import from (itself included). */
export const ALLOWED = {
  shared: ['shared'],
  engine: ['shared', 'engine'],
  host: ['shared', 'engine', 'host'],
  cli: ['shared', 'engine', 'host', 'cli'],
  main: ['shared', 'engine', 'host', 'main'],
  preload: ['shared', 'preload'],
  renderer: ['shared', 'engine', 'renderer'],
};

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** The relative import specifiers of one module's source text. */
export function relativeImports(source) {
  const found = [];
  for (const match of source.matchAll(SPECIFIER)) {
    const spec = match[1] ?? match[2];
    if (spec.startsWith('.')) found.push(spec);
  }
  return found;
}

/** `files`: [path relative to src/, source text]; returns one line per import that points up. */
export function layerViolations(files) {
  const violations = [];
  for (const [file, source] of files) {
    const layer = file.split('/')[0];
    const allowed = ALLOWED[layer];
    if (!allowed) continue;
    for (const spec of relativeImports(source)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec));
      const targetLayer = target.split('/')[0];
      if (targetLayer in ALLOWED && !allowed.includes(targetLayer)) {
        violations.push(`${file} imports ${spec}: ${layer} may import only ${allowed.join(', ')}`);
      }
    }
  }
  return violations;
}

/** Where a relative import of `file` lands, as a path relative to src/ without its extension. */
function importTarget(file, spec) {
  return path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)).replace(/\.(js|ts|tsx|mjs|mts)$/, '');
}

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
 * `files`: [path relative to src/, source text]; one line per import cycle inside the engine:
 * between its modules, and between its folders (each file at the engine's root counting as its own).
 */
export function engineCycles(files) {
  const engine = files.filter(([file]) => file.startsWith('engine/'));
  const modules = new Set(engine.map(([file]) => file.replace(/\.(ts|tsx|mts)$/, '')));
  const resolve = (target) => (modules.has(target) ? target : modules.has(`${target}/index`) ? `${target}/index` : null);
  const unitOf = (module) => (module.split('/').length > 2 ? `${module.split('/').slice(0, 2).join('/')}/` : `${module}.ts`);
  const moduleGraph = new Map();
  const unitGraph = new Map();
  const addEdge = (graph, from, to, why) => {
    if (!graph.has(from)) graph.set(from, new Map());
    if (!graph.get(from).has(to)) graph.get(from).set(to, why);
  };
  for (const [file, source] of engine) {
    const from = file.replace(/\.(ts|tsx|mts)$/, '');
    for (const spec of relativeImports(source)) {
      const to = resolve(importTarget(file, spec));
      if (to === null || to === from) continue;
      const why = `${file.slice('engine/'.length)} imports ${spec}`;
      addEdge(moduleGraph, from, to, why);
      if (unitOf(from) !== unitOf(to)) addEdge(unitGraph, unitOf(from), unitOf(to), why);
    }
  }
  const name = (node) => node.replace(/^engine\//, '');
  const lines = [];
  for (const cycle of cyclesOf(moduleGraph)) {
    lines.push(`import cycle in the engine: ${cycle.map((m) => `${name(m)}.ts`).join(' → ')}`);
  }
  for (const cycle of cyclesOf(unitGraph)) {
    const reasons = cycle.slice(1).map((to, i) => unitGraph.get(cycle[i]).get(to));
    lines.push(`import cycle between engine folders: ${cycle.map(name).join(' → ')} (${reasons.join('; ')})`);
  }
  return lines;
}

function sourceFiles(dir, root = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full, root);
    return /\.(ts|tsx|mts)$/.test(entry.name) ? [[path.relative(root, full).split(path.sep).join('/'), readFileSync(full, 'utf8')]] : [];
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const src = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
  const files = sourceFiles(src);
  const violations = [...layerViolations(files), ...engineCycles(files)];
  for (const line of violations) console.error(line);
  if (violations.length > 0) process.exit(1);
  console.log('layers: every import in src/ points down, and the engine has no import cycle');
}
