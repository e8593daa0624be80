// Content hashes of weight files, for the graph cache key: a graph is reused only for the same
// bytes, not merely the same name, size and mtime (a file rewritten with its mtime restored must
// rebuild). Hashing gigabytes on every load would be slow, so each hash is remembered in a small
// record under <cache>/weight-hashes/, keyed by the file's path and trusted while its size and
// mtime are unchanged: a file is hashed once, and again only after it changed.
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, readSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

interface HashRecord {
  path: string;
  size: number;
  mtimeMs: number;
  sha256: string;
}

export function weightHashesDir(cacheDir: string): string {
  return join(cacheDir, 'weight-hashes');
}

function recordPath(file: string, cacheDir: string): string {
  return join(weightHashesDir(cacheDir), `${createHash('sha256').update(resolve(file)).digest('hex').slice(0, 32)}.json`);
}

/** SHA-256 of a file's bytes, read in chunks (weights may be far larger than memory should hold at once). */
export function hashFile(file: string): string {
  const hash = createHash('sha256');
  const fd = openSync(file, 'r');
  try {
    const chunk = Buffer.allocUnsafe(8 << 20);
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, null);
      if (n === 0) break;
      hash.update(chunk.subarray(0, n));
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest('hex');
}

/**
 * The file's content hash: the remembered one while size and mtime match, else hashed now and
 * remembered. `onHash` hears when a file is actually read (a first load of large weights takes a while).
 */
export function weightContentHash(file: string, cacheDir: string, onHash?: (file: string) => void): string {
  const stat = statSync(file);
  const where = recordPath(file, cacheDir);
  try {
    const known = JSON.parse(readFileSync(where, 'utf8')) as HashRecord;
    if (known.path === resolve(file) && known.size === stat.size && known.mtimeMs === stat.mtimeMs && /^[0-9a-f]{64}$/.test(known.sha256)) return known.sha256;
  } catch {
    // no record yet, or an unreadable one: hash again
  }
  onHash?.(file);
  const sha256 = hashFile(file);
  const record: HashRecord = { path: resolve(file), size: stat.size, mtimeMs: stat.mtimeMs, sha256 };
  try {
    mkdirSync(weightHashesDir(cacheDir), { recursive: true });
    const temporary = `${where}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(record)}\n`);
    renameSync(temporary, where);
  } catch {
    // A cache that cannot be written only costs a rehash next time.
  }
  return sha256;
}
