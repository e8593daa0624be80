// No function in src/ runs over 120 lines: a longer one is several steps that want names. The
// TypeScript compiler parses every .ts/.tsx file under src/ and each function-like node with a
// body (declarations, methods, arrows, function expressions, accessors) is measured from its
// first line to its last, nested functions counted inside their parent too. Run as a script, it
// checks src/ and exits 1 naming each function over the limit.
import ts from 'typescript';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PROJECT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
export const MAX_FUNCTION_LINES = 120;

/** A function's name as a reader finds it: its own, or the variable, property or method it is assigned to. */
function nameOf(node) {
  if (node.name) return node.name.getText();
  const parent = node.parent;
  if (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) return parent.name.getText();
  // A callback goes by the function it is written in: `createStudioStore→callback`.
  for (let up = parent; up; up = up.parent) if (ts.isFunctionLike(up) && up.body) return `${nameOf(up)}→callback`;
  return '(anonymous)';
}

function sourceFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

/** Every function of a source text over `max` lines: { name, line, lines }. */
export function longFunctions(fileName, text, max = MAX_FUNCTION_LINES) {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found = [];
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) found.push({ name: nameOf(node), line: first + 1, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** One line per function over the limit in the project's src/ (empty: all fit). */
export function checkFunctionLength(root = PROJECT) {
  const problems = [];
  for (const file of sourceFiles(path.join(root, 'src'))) {
    const relative = path.relative(root, file).split(path.sep).join('/');
    for (const fn of longFunctions(relative, readFileSync(file, 'utf8'))) {
      problems.push(`${relative}:${fn.line} ${fn.name} is ${fn.lines} lines; at most ${MAX_FUNCTION_LINES}`);
    }
  }
  return problems;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkFunctionLength();
  for (const line of problems) console.error(line);
  if (problems.length > 0) {
    console.error(`functions over ${MAX_FUNCTION_LINES} lines: split each into named steps (scripts/check-function-length.mjs)`);
    process.exit(1);
  }
  console.log(`function length: every function in src/ fits in ${MAX_FUNCTION_LINES} lines`);
}
