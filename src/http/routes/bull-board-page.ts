/**
 * Bull Board's page, kept on this host: its HTML asks fonts.googleapis.com for IBM Plex (a request
 * to a third party on every admin visit, and a stalled stylesheet where the network is closed).
 * The link is taken out as the page is rendered; the page falls back to the system's sans-serif
 * and monospace (docs/decisions.md says why not serve the fonts ourselves).
 */
import type { RequestHandler } from 'express';

/** A stylesheet or preconnect link to a font host. */
const FONT_HOST_LINK =
  /<link\b[^>]*\bhref="https:\/\/fonts\.(?:googleapis|gstatic)\.com[^"]*"[^>]*>\s*/g;

export function withoutFontHost(html: string): string {
  return html.replace(FONT_HOST_LINK, '');
}

/**
 * In front of Bull Board's router: its entry page is rendered (res.render) into a string and sent
 * without the font host's link. Its API and static files pass untouched.
 */
export const bullBoardPageLocal: RequestHandler = (_req, res, next) => {
  const render = res.render.bind(res);
  res.render = (view: string, options?: object) =>
    render(view, options ?? {}, (err: Error | null, html: string) => {
      if (err) next(err);
      else res.send(withoutFontHost(html));
    });
  next();
};
