// Policies by name: the baselines and the ECHO family (ddd, dense, fixed, echo), and any policy a
// program registers beside them (registerPolicy).
import { ArPolicy } from './ar.js';
import { ChainPolicy } from './chain.js';
import { DddPolicy } from './ddd.js';
import { DensePolicy } from './dense.js';
import { Eagle2Policy } from './eagle2.js';
import { EchoPolicy } from './echo.js';
import { FixedPolicy } from './fixed.js';
import { StaticPolicy } from './static.js';
import type { PolicyOptions, SpeculationPolicy } from './types.js';
import { PolicyNameSchema } from '../../shared/config.js';
import { Refusal } from '../refusal.js';

export type PolicyFactory = (options: PolicyOptions) => SpeculationPolicy;

const registry = new Map<string, PolicyFactory>([
  ['ar', () => new ArPolicy()],
  ['chain', (o) => new ChainPolicy(o)],
  ['static', (o) => new StaticPolicy(o)],
  ['eagle2', (o) => new Eagle2Policy(o)],
  ['ddd', (o) => new DddPolicy(o)],
  ['dense', (o) => new DensePolicy(o)],
  ['fixed', (o) => new FixedPolicy(o)],
  ['echo', (o) => new EchoPolicy(o)],
]);

/**
 * Adds a policy under a new name: createPolicy builds it from then on, and every test that
 * iterates availablePolicies() covers it. A name already taken is refused, so a built-in policy
 * cannot be replaced by accident.
 */
export function registerPolicy(name: string, factory: PolicyFactory): void {
  if (!PolicyNameSchema.safeParse(name).success) {
    throw new Error(`policy name "${name}": use lower-case letters, digits and dashes`);
  }
  if (registry.has(name)) throw new Error(`a policy named "${name}" is already registered`);
  registry.set(name, factory);
}

export function availablePolicies(): string[] {
  return [...registry.keys()];
}

/** A name's problem as one line listing the registered policies, or null when it is registered. */
export function unknownPolicy(name: string): string | null {
  return registry.has(name) ? null : `unknown policy "${name}" (choose from ${availablePolicies().join(', ')})`;
}

export function createPolicy(name: string, options: PolicyOptions): SpeculationPolicy {
  const factory = registry.get(name);
  if (!factory) throw new Refusal(unknownPolicy(name)!);
  return factory(options);
}

export type { PolicyOptions, SpeculationPolicy, StepContext, StepRequest } from './types.js';
