// Parsers for command-line values that several commands share; each throws commander's
// InvalidArgumentError, so a bad value is reported as one line naming the flag.
import { InvalidArgumentError } from 'commander';

/** A whole number of at least `min`, e.g. integer('--requests', 1). */
export function integer(name: string, min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer ≥ ${min}, got "${value}"`);
    return n;
  };
}

/** A comma-separated list whose parts are each parsed by `parse`; empty parts are refused. */
export function list<T>(name: string, parse: (part: string) => T) {
  return (value: string): T[] => {
    const parts = value.split(',').map((p) => p.trim());
    if (parts.some((p) => p === '')) throw new InvalidArgumentError(`${name} takes a comma-separated list, got "${value}"`);
    return parts.map(parse);
  };
}
