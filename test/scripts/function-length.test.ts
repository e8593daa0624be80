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

  it('finds no function in src/ over its limit', () => {
    expect(checkFunctionLength()).toEqual([]);
  });
});
