// Every test run gets its own temp folder, removed when the run ends: tests, the CLI processes
// they start and Chromium all write under os.tmpdir(), and thousands of runs must not fill /tmp.
// The studio's data folder (XDG_DATA_HOME) lives there as well.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'echo-studio-tests-'));
  // Workers and child processes start after this and inherit it; os.tmpdir() reads it per call.
  process.env.TMPDIR = root;
  // The studio's per-user data folder (serve's default) goes there too, never into the user's home.
  process.env.XDG_DATA_HOME = join(root, 'data-home');
  return () => rmSync(root, { recursive: true, force: true });
}
