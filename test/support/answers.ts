/**
 * Every answer a test's app makes, as `METHOD /path/{template} STATUS`, checked after each file
 * against /openapi.json (test/support/answers-setup.ts): an answer the document does not list
 * explicitly (only under `default`) is drift. Listens beside the app on the server's 'request'
 * event, so no application code knows about it; the fast path's answers are seen too.
 */
import type { Server } from 'node:http';

const seen = new Map<string, string>(); // answer -> the URL that first made it

export function recordAnswers(server: Server): void {
  server.on('request', (req, res) => {
    res.on('finish', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const answer = `${req.method} ${path} ${res.statusCode}`;
      if (!seen.has(answer)) seen.set(answer, req.url ?? '/');
    });
  });
}

/** Answers made so far whose route the document has but whose status it does not list. */
export function undocumentedAnswers(doc: {
  paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
}): string[] {
  const templates = Object.entries(doc.paths).map(([template, ops]) => ({
    template,
    ops,
    re: new RegExp(`^${template.replace(/\{\w+\}/g, '[^/]+')}$`),
  }));
  const out: string[] = [];
  for (const answer of seen.keys()) {
    const [method, path, status] = answer.split(' ') as [string, string, string];
    const t = templates.find((x) => x.re.test(path));
    const op = t?.ops[method.toLowerCase()];
    // an unknown route or method is the router's 404/405, under `default`; HEAD is GET's
    if (!t || !op) continue;
    if (!(status in op.responses)) out.push(`${method} ${t.template} ${status}`);
  }
  return [...new Set(out)].sort();
}
