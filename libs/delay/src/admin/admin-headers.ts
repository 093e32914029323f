import { applyDecorators, Header } from '@nestjs/common';

/**
 * The page's Content-Security-Policy, on every page and every error page:
 * inline styles only (no script, image, font or frame, nothing fetched),
 * forms post only to this site, no page may frame it, and no `<base>` can
 * move its relative links elsewhere.
 */
export const ADMIN_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * Headers every admin response carries, pages and error pages alike.
 * Referrer-Policy is same-origin, not no-referrer: under no-referrer a
 * browser sends `Origin: null` with the page's own form posts, and a write
 * with `Origin: null` is refused (see assertSameOrigin). The page links to
 * nothing outside itself, so no referrer leaves the site either way.
 */
export const ADMIN_HEADERS: Readonly<Record<string, string>> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': ADMIN_CSP,
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
};

/** Puts ADMIN_HEADERS on a page route's response. */
export function AdminPageHeaders(): MethodDecorator {
  return applyDecorators(...Object.entries(ADMIN_HEADERS).map(([name, value]) => Header(name, value)));
}
