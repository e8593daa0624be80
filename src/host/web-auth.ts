// Who may use the web host: the per-launch token of the controlling link or the observer link's,
// in the URL or in the cookie the first page load set, and on a loopback bind a loopback Host
// header (DNS rebinding). Every HTTP request and WebSocket upgrade is admitted here first.
import type { IncomingMessage } from 'node:http';
import { hostnameOf, isLoopbackAddress, tokenMatches } from './security.js';

/**
 * What a link may do: the controlling link steers the studio; an observer link sees every broadcast
 * and may send only OBSERVER_REQUESTS (a room watching one projected run, a colleague looking at a
 * shared machine's run).
 */
export type Access = 'control' | 'observe';

export interface WebAuth {
  /** What a presented token lets its holder do; null for neither token. */
  accessOfToken(presented: string | null): Access | null;
  /** Why a request is refused, or what its link may do. */
  admit(req: IncomingMessage, url: URL): { refused: string } | { access: Access };
  /** The cookie that hands a link's token to the page's own requests (scripts, styles carry none in their URL). */
  cookie(access: Access): string;
}

/** The checks of one web host: its two tokens, whether it binds loopback only, its port (known once bound). */
export function webAuth(options: { token: string; observerToken: string; loopbackOnly: boolean; port: () => number }): WebAuth {
  const { token, observerToken, loopbackOnly } = options;
  const cookieName = (access: Access) => (access === 'control' ? `echo_studio_token_${options.port()}` : `echo_studio_observer_${options.port()}`);
  const accessOfToken = (presented: string | null): Access | null =>
    tokenMatches(presented, token) ? 'control' : tokenMatches(presented, observerToken) ? 'observe' : null;
  /** What the request's token (in the URL, else in a cookie an earlier page load set) lets it do. */
  const accessOf = (req: IncomingMessage, url: URL): Access | null => {
    const fromQuery = url.searchParams.get('token');
    if (fromQuery !== null) return accessOfToken(fromQuery);
    const cookies = new Map<string, string>();
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const [name, ...rest] = part.trim().split('=');
      cookies.set(name, rest.join('='));
    }
    if (tokenMatches(cookies.get(cookieName('control')), token)) return 'control';
    if (tokenMatches(cookies.get(cookieName('observe')), observerToken)) return 'observe';
    return null;
  };
  return {
    accessOfToken,
    admit(req, url) {
      const hostHeader = req.headers.host ?? '';
      if (loopbackOnly && !isLoopbackAddress(hostnameOf(hostHeader))) {
        return { refused: `host ${JSON.stringify(hostHeader)} is not this loopback server` };
      }
      const granted = accessOf(req, url);
      if (granted === null) return { refused: 'missing or wrong access token: open the full URL printed when echo-studio serve started' };
      return { access: granted };
    },
    cookie(access) {
      return `${cookieName(access)}=${access === 'control' ? token : observerToken}; Path=/; HttpOnly; SameSite=Strict`;
    },
  };
}
