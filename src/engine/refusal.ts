// What was asked cannot be done as given: a folder that is no model, a prompts or profile file
// that does not parse, a pair too large for this machine, a knob out of range. Such an error is
// expected and its message says all of it, so callers (the CLI, the studio's host) show it as one
// line; any other error is a fault whose stack is worth keeping.

export class Refusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Refusal';
  }
}

/** The stack to keep for an error: none for a refusal, whose message is the whole story. */
export function faultStack(err: unknown): string | undefined {
  if (err instanceof Refusal) return undefined;
  return err instanceof Error ? err.stack : undefined;
}
