/**
 * The queue page's files (queue-page/ at the repository's root, copied beside dist/src by the
 * build): its script, style and service worker, the door's script and solver, the shop's theme (QUEUE_PAGE_THEME_CSS), and the
 * message catalogues. Read once at start; each asset is named by its content's hash, so it is
 * cached for good and a new release is a new name.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** queue-page/ from src/http/routes/ (and from dist/src/http/routes/: the build copies it beside) */
export const QUEUE_PAGE_DIR = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '..',
  'queue-page',
);

export interface Asset {
  /** the name it is served under: `<name>.<hash>.<ext>` */
  file: string;
  type: string;
  body: Buffer;
}

export type Messages = Readonly<Record<string, string>>;

export interface QueuePageAssets {
  script: Asset;
  style: Asset;
  /** the door's challenge, answered before a join (door.js), and its solver (a web worker) */
  door: Asset;
  doorWorker: Asset;
  /** the shop's theme, after the page's style; undefined: none */
  theme: Asset | undefined;
  /** served at a stable URL (a registration names it), never cached for long */
  serviceWorker: Buffer;
  /** by language (`en`, `de`, ...): English first, the page's fallback */
  catalogues: ReadonlyMap<string, Messages>;
  /** hashed file name -> asset */
  byFile: ReadonlyMap<string, Asset>;
}

const hashed = (name: string, ext: string, type: string, body: Buffer): Asset => ({
  file: `${name}.${createHash('sha256').update(body).digest('hex').slice(0, 12)}.${ext}`,
  type,
  body,
});

/** The catalogues of `dir`/messages, English first. */
export function readCatalogues(dir = QUEUE_PAGE_DIR): Map<string, Messages> {
  const langs = readdirSync(join(dir, 'messages'))
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -'.json'.length))
    .sort((a, b) => (a === 'en' ? -1 : b === 'en' ? 1 : a.localeCompare(b)));
  return new Map(
    langs.map((lang) => [
      lang,
      JSON.parse(readFileSync(join(dir, 'messages', `${lang}.json`), 'utf8')) as Messages,
    ]),
  );
}

/**
 * Reads every file once. @param themeCss - QUEUE_PAGE_THEME_CSS (a path); a file that cannot be
 * read stops the start with its name.
 */
export function loadQueuePageAssets(themeCss: string | undefined): QueuePageAssets {
  const read = (name: string) => readFileSync(join(QUEUE_PAGE_DIR, name));
  const script = hashed('page', 'js', 'text/javascript', read('page.js'));
  const style = hashed('page', 'css', 'text/css', read('page.css'));
  const door = hashed('door', 'js', 'text/javascript', read('door.js'));
  const doorWorker = hashed('door-worker', 'js', 'text/javascript', read('door-worker.js'));
  let theme: Asset | undefined;
  if (themeCss) {
    let body: Buffer;
    try {
      body = readFileSync(themeCss);
    } catch (err) {
      throw new Error(`QUEUE_PAGE_THEME_CSS: cannot read ${themeCss}: ${(err as Error).message}`);
    }
    theme = hashed('theme', 'css', 'text/css', body);
  }
  const assets = [script, style, door, doorWorker, ...(theme ? [theme] : [])];
  return {
    script,
    style,
    door,
    doorWorker,
    theme,
    serviceWorker: read('sw.js'),
    catalogues: readCatalogues(),
    byFile: new Map(assets.map((a) => [a.file, a])),
  };
}
