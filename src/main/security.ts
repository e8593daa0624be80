// Pure security rules of the desktop app, kept apart from Electron so they can be unit-tested.
import path from 'node:path';

/** The renderer is served from this privileged custom scheme, never from file:// or http://. */
export const APP_SCHEME = 'app';
export const APP_HOST = 'studio';
export const APP_ORIGIN = `${APP_SCHEME}://${APP_HOST}`;
export const APP_ENTRY_URL = `${APP_ORIGIN}/index.html`;

/** True when an IPC message comes from a frame showing the app's own renderer. */
export function isTrustedSenderUrl(frameUrl: string | undefined | null): boolean {
  if (!frameUrl) return false;
  try {
    const url = new URL(frameUrl);
    return url.protocol === `${APP_SCHEME}:` && url.host === APP_HOST;
  } catch {
    return false;
  }
}

/** Navigation is allowed only within the app's own pages (e.g. a reload). */
export function isAllowedNavigation(targetUrl: string): boolean {
  return isTrustedSenderUrl(targetUrl);
}

/**
 * Maps an app:// request URL to a file inside the renderer build; null for anything outside it
 * (path traversal, other hosts).
 */
export function resolveAppFile(rendererDir: string, requestUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(requestUrl);
  } catch {
    return null;
  }
  if (url.protocol !== `${APP_SCHEME}:` || url.host !== APP_HOST) return null;
  let pathname: string;
  try {
    pathname = decodeURIComponent(url.pathname);
  } catch {
    return null;
  }
  if (pathname === '/' || pathname === '') pathname = '/index.html';
  const root = path.resolve(rendererDir);
  const file = path.resolve(root, '.' + pathname);
  return file.startsWith(root + path.sep) ? file : null;
}

/** electron-builder puts unpacked files (native modules, models) next to app.asar. */
export function unpackedPath(p: string): string {
  return p.replace(`${path.sep}app.asar${path.sep}`, `${path.sep}app.asar.unpacked${path.sep}`);
}
