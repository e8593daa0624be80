import { closeSync, openSync, writeSync } from 'node:fs';

/** Write text pieces to path in ~1 MB batches: no huge string, no system call per piece. */
export function writeTextPieces(path: string, pieces: Iterable<string>): void {
  const fd = openSync(path, 'w');
  try {
    let pending = '';
    for (const piece of pieces) {
      pending += piece;
      if (pending.length > 1 << 20) (writeAll(fd, pending), (pending = ''));
    }
    if (pending !== '') writeAll(fd, pending);
  } finally {
    closeSync(fd);
  }
}

function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
}
