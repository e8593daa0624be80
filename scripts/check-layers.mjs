// Layers point down only: shared ← engine ← host ← cli/main. The renderer and preload sit on
// shared (the renderer may also use the engine's pure modules); nothing imports the renderer,
// cli or main. Run as a script, it checks src/ and exits 1 naming each import that points up.
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

function sourceFiles(dir, root = dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full, root);
    return /\.(ts|tsx|mts)$/.test(entry.name) ? [[path.relative(root, full).split(path.sep).join('/'), readFileSync(full, 'utf8')]] : [];
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const src = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'src');
  const violations = layerViolations(sourceFiles(src));
  for (const line of violations) console.error(line);
  if (violations.length > 0) process.exit(1);
  console.log('layers: every import in src/ points down');
}
