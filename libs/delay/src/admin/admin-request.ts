import { ForbiddenException } from '@nestjs/common';

/** The little of an HTTP request the admin page reads, the same on Express and Fastify. */
export interface AdminRequest {
  readonly originalUrl?: string;
  readonly url?: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/**
 * The URL path the page is mounted at, as the browser sees it (with the
 * app's global prefix, if any), read from the request so that every link
 * and form works wherever the app mounts the page.
 */
export function mountBase(request: AdminRequest, path: string): string {
  const pathname = (request.originalUrl ?? request.url ?? '/').split('?')[0] as string;
  const at = pathname.indexOf(`/${path}`);
  return at < 0 ? `/${path}` : pathname.slice(0, at + path.length + 1);
}

/**
 * Refuses a write that may come from another site. The guards decide who may
 * act; this stops a page elsewhere from making a signed-in operator's
 * browser act for it, since browsers send cookies and saved credentials
 * (Basic auth included) with such posts. Browsers send `Origin` with every
 * POST, so a write must carry one naming this host. `Origin: null` (a
 * sandboxed frame, a redirect across sites, a `data:` page) names no site and
 * is refused. A POST without Origin is accepted only when the browser says,
 * with `Sec-Fetch-Site: same-origin`, that it comes from this origin; and any
 * other `Sec-Fetch-Site` value refuses the write whatever the Origin says.
 */
export function assertSameOrigin(request: AdminRequest): void {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const fetchSite = header('sec-fetch-site');
  if (fetchSite !== undefined && fetchSite !== 'same-origin') {
    throw new ForbiddenException(`A write from another site is refused (Sec-Fetch-Site: ${fetchSite}); use the buttons of this page.`);
  }
  const origin = header('origin');
  if (origin === undefined) {
    if (fetchSite === 'same-origin') return;
    throw new ForbiddenException('A write without an Origin header is refused: post it from this page in a browser, or send Origin with this host (e.g. Origin: https://<host>).');
  }
  if (origin === 'null') throw new ForbiddenException('A write with "Origin: null" is refused: it names no site (a sandboxed frame, a redirect or a local file sends it).');
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw new ForbiddenException('A write with a malformed Origin header is refused.');
  }
  const host = header('x-forwarded-host') ?? header('host');
  if (host === undefined || originHost.toLowerCase() !== host.toLowerCase()) {
    throw new ForbiddenException(`A write from another site is refused (Origin ${origin} is not this host).`);
  }
}
