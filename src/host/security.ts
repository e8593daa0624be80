// Security rules shared by the desktop app and the web host.
import { randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * One policy for every page of the renderer: scripts and styles only from the app itself, no
 * inline scripts, no plugins, no framing; connections only back to the origin (the web host's
 * WebSocket; 'self' covers ws: on the same host and port); workers only from the app's own
 * scripts (the WebSocket transport's socket worker).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "worker-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** A fresh per-launch access token (like Jupyter's), URL-safe. */
export function newAccessToken(): string {
  return randomBytes(24).toString('base64url');
}

/** Compares a presented token with the expected one in constant time. */
export function tokenMatches(presented: string | null | undefined, expected: string): boolean {
  if (typeof presented !== 'string') return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

export function isLoopbackAddress(host: string): boolean {
  return LOOPBACK_HOSTNAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The hostname part of a Host header ("127.0.0.1:8080" → "127.0.0.1", "[::1]:80" → "[::1]"). */
export function hostnameOf(hostHeader: string): string {
  const bracketed = /^(\[[^\]]+\])(?::\d+)?$/.exec(hostHeader);
  if (bracketed) return bracketed[1].toLowerCase();
  return hostHeader.replace(/:\d+$/, '').toLowerCase();
}
