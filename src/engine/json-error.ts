// Where JSON.parse stopped, for error messages. Its own messages quote the text around the
// problem, which could be any file's bytes (a secret, when a path was mistyped or planted), so
// errors about a file's JSON say only where it broke.

/** " (at character N)" from a JSON.parse error, or "" when it does not say. */
export function jsonErrorPosition(err: unknown): string {
  const m = /at position (\d+)/.exec(String((err as Error)?.message ?? ''));
  return m ? ` (at character ${Number(m[1]) + 1})` : '';
}
