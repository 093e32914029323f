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
 * Refuses a form posted from another site. The guards decide who may act;
 * this stops a page elsewhere from making a signed-in operator's browser act
 * for it, since browsers send cookies and saved credentials with such posts.
 */
export function assertSameOrigin(request: AdminRequest): void {
  const header = (name: string): string | undefined => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  if (header('sec-fetch-site') === 'cross-site') throw new ForbiddenException('A form posted from another site is refused.');
  const origin = header('origin');
  if (origin === undefined || origin === 'null') return;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    throw new ForbiddenException('A form with a malformed Origin header is refused.');
  }
  const host = header('x-forwarded-host') ?? header('host');
  if (host !== undefined && originHost !== host) throw new ForbiddenException('A form posted from another site is refused.');
}
