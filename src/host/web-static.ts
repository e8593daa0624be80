// The web host's pages: the renderer build's files, served with the studio's security headers,
// never a file outside the build folder; and the one-line refusals every route answers with.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { CONTENT_SECURITY_POLICY } from './security.js';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/** A refusal in one plain-text line. */
export function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(`${message}\n`);
}

/** A file of the renderer build (`/` is index.html); `cookie`, when given, hands the link's token to the page. */
export async function serveRendererFile(req: IncomingMessage, res: ServerResponse, url: URL, rendererDir: string, cookie: string | null): Promise<void> {
  let relative: string;
  try {
    relative = decodeURIComponent(url.pathname);
  } catch {
    refuse(res, 400, 'bad path');
    return;
  }
  if (relative === '/' || relative === '') relative = '/index.html';
  const file = path.resolve(rendererDir, '.' + relative);
  if (file !== rendererDir && !file.startsWith(rendererDir + path.sep)) {
    refuse(res, 404, 'not found');
    return;
  }
  let info;
  try {
    info = await stat(file);
  } catch {
    if (relative === '/index.html') {
      refuse(res, 503, 'the renderer is not built: run `npm run build` first');
    } else {
      refuse(res, 404, 'not found');
    }
    return;
  }
  if (!info.isFile()) {
    refuse(res, 404, 'not found');
    return;
  }
  const headers: Record<string, string> = {
    'Content-Type': CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream',
    'Content-Length': String(info.size),
    'Content-Security-Policy': `${CONTENT_SECURITY_POLICY}; frame-ancestors 'none'`,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cache-Control': 'no-store',
  };
  // The page's own requests (scripts, styles) carry no token in the URL: hand it over as a
  // strict same-site cookie once the token-bearing URL has been opened.
  if (cookie !== null) headers['Set-Cookie'] = cookie;
  res.writeHead(200, headers);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  createReadStream(file).pipe(res);
}
