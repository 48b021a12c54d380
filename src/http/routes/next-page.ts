/**
 * One shape for every paged listing (GET /admin/orders, /admin/events, /admin/audit;
 * docs/api.md#paging): `next` is an opaque cursor, passed back as `after` (null once a finite
 * listing has nothing more), and while there is a next page a `Link: <...>; rel="next"` header
 * (RFC 8288) names its URL with the request's own filters, so a client follows the header or
 * sends `after=<next>` with the same query: one loop for the three.
 */
import type { Response } from 'express';

/** The query of a page as validated (undefined: left out). */
export type PageQuery = Record<string, string | number | undefined>;

/**
 * The URL of the page after this one: `path` with `query`'s filters and `after` set to `next`.
 * Built from the validated query, so nothing the request sent besides it is echoed.
 */
export function nextPageUrl(path: string, query: PageQuery, next: string): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && name !== 'after') params.set(name, String(value));
  }
  params.set('after', next);
  return `${path}?${params.toString()}`;
}

/** Sets the `Link` header when there is a next page; returns `next` for the body. */
export function linkNext(
  res: Response,
  path: string,
  query: PageQuery,
  next: string | null,
): string | null {
  if (next !== null) res.setHeader('Link', `<${nextPageUrl(path, query, next)}>; rel="next"`);
  return next;
}
