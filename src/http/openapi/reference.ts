/**
 * `GET /docs`: the API reference, rendered by Swagger UI (swagger-ui-dist) from /openapi.json.
 * Its assets are served from node_modules by this process, so the page works offline and behind a
 * firewall, and asks no third party for anything (no CDN, no online validator; the package's
 * install-time telemetry script is denied in package.json's allowScripts).
 */
import { dirname } from 'node:path';
import { createRequire } from 'node:module';
import express, { type IRouter, type Response } from 'express';

const ASSETS = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>seckill API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  defaultModelsExpandDepth: 0,
});
`;

// Only this process's origin: a reference page has no reason to talk to anyone else.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const send = (res: Response, type: string, body: string) =>
  res
    .status(200)
    .set({ 'Content-Type': type, 'Content-Security-Policy': CSP, 'Cache-Control': 'no-cache' })
    .send(body);

export function mountApiReference(router: IRouter): void {
  // a browser asks every origin for one: an empty answer it may keep, not a 404 in the logs
  router.get('/favicon.ico', (_req, res) =>
    res.status(204).set('Cache-Control', 'public, max-age=86400').end(),
  );
  router.get('/docs', (_req, res) => send(res, 'text/html; charset=utf-8', PAGE));
  router.get('/docs/init.js', (_req, res) => send(res, 'text/javascript; charset=utf-8', INIT));
  router.use(
    '/docs/assets',
    express.static(ASSETS, { index: false, fallthrough: false, maxAge: '1h' }),
  );
}
