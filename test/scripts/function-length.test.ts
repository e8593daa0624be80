import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkFunctionLength, longFunctions } from '../../scripts/check-function-length.mjs';

const body = (lines: number) => Array.from({ length: lines - 2 }, (_, i) => `  const x${i} = ${i};`).join('\n');

describe('function length check (TypeScript compiler API)', () => {
  it('measures declarations, arrows, methods and callbacks by the name a reader finds them under', () => {
    const source = [
      `export function long() {\n${body(121)}\n}`,
      `export function fits() {\n${body(120)}\n}`,
      `const arrow = () => {\n${body(125)}\n};`,
      `class A {\n  method() {\n${body(130)}\n  }\n}`,
      `export function outer() {\n  return [1].map(() => {\n${body(122)}\n  });\n}`,
    ].join('\n');
    const found = longFunctions('sample.ts', source).map((f) => `${f.name}:${f.lines}`);
    expect(found).toEqual(['long:121', 'arrow:125', 'method:130', 'outer:124', 'outer→callback:122']);
  });

  it('names each function over 120 lines under a project\'s src/, whatever folder it is in, and no other', () => {
    const root = mkdtempSync(path.join(tmpdir(), 'function-length-'));
    try {
      mkdirSync(path.join(root, 'src', 'deep'), { recursive: true });
      writeFileSync(path.join(root, 'src', 'deep', 'a.tsx'), `export function fits() {\n${body(120)}\n}\nexport function tooLong() {\n${body(121)}\n}\n`);
      writeFileSync(path.join(root, 'src', 'b.d.ts'), `declare function f(): void;\n`);
      expect(checkFunctionLength(root)).toEqual(['src/deep/a.tsx:121 tooLong is 121 lines; at most 120']);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('finds no function in src/ over 120 lines', () => {
    expect(checkFunctionLength()).toEqual([]);
  });
});
