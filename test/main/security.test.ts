import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { APP_ENTRY_URL, isAllowedNavigation, isTrustedSenderUrl, resolveAppFile, unpackedPath } from '../../src/main/security.js';
import { CONTENT_SECURITY_POLICY } from '../../src/host/security.js';

describe('desktop security rules', () => {
  it('trusts IPC only from the app:// renderer', () => {
    expect(isTrustedSenderUrl(APP_ENTRY_URL)).toBe(true);
    expect(isTrustedSenderUrl('app://studio/index.html#step=3')).toBe(true);
    for (const url of ['https://example.com/', 'file:///etc/passwd', 'app://other/index.html', 'http://127.0.0.1:5177/', '', null, undefined, 'not a url']) {
      expect(isTrustedSenderUrl(url), String(url)).toBe(false);
    }
  });

  it('allows navigation only within the app', () => {
    expect(isAllowedNavigation('app://studio/index.html')).toBe(true);
    expect(isAllowedNavigation('https://evil.example/')).toBe(false);
  });

  it('maps app:// URLs into the renderer build and nowhere else', () => {
    const root = path.resolve('/opt/echo/dist/renderer');
    expect(resolveAppFile(root, 'app://studio/')).toBe(path.join(root, 'index.html'));
    expect(resolveAppFile(root, 'app://studio/assets/index-1.js')).toBe(path.join(root, 'assets', 'index-1.js'));
    expect(resolveAppFile(root, 'app://studio/..%2f..%2fmain%2fmain.js')).toBeNull();
    expect(resolveAppFile(root, 'app://studio/%2e%2e/x')).toBe(path.join(root, 'x')); // URL parsing resolves it inside
    expect(resolveAppFile(root, 'app://other/index.html')).toBeNull();
    expect(resolveAppFile(root, 'file:///etc/passwd')).toBeNull();
  });

  it('points native code at the unpacked copy of packaged files', () => {
    const packed = path.join('/opt/ECHO Studio/resources/app.asar', 'assets', 'models');
    expect(unpackedPath(packed)).toBe(path.join('/opt/ECHO Studio/resources/app.asar.unpacked', 'assets', 'models'));
    expect(unpackedPath('/home/user/echo-studio/assets/models')).toBe('/home/user/echo-studio/assets/models');
  });

  it('uses a CSP without inline or eval scripts', () => {
    expect(CONTENT_SECURITY_POLICY).toContain("script-src 'self'");
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/unsafe-(inline|eval)/);
    expect(CONTENT_SECURITY_POLICY).toContain("object-src 'none'");
  });
});
