/**
 * The queue page's translations are complete: every catalogue (queue-page/messages/*.json) has
 * exactly English's keys with the same {placeholders}, every key the page and its HTML use is in
 * English (a missing one fails here, not in front of a shopper), and each catalogue's plural
 * keys cover the forms its language uses. The language is picked from ?lang=, then
 * Accept-Language by q, then English.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { QUEUE_PAGE_DIR, readCatalogues } from '../../src/http/routes/queue-page-assets.js';
import { pickLanguage } from '../../src/http/routes/queue-page.js';

const catalogues = readCatalogues();
const english = catalogues.get('en')!;
const placeholders = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

/** Keys a source names: t('key'), tn('key', n) (its plural forms), and the HTML's t('key'). */
function usedKeys(): { plain: Set<string>; plural: Set<string> } {
  const page = readFileSync(join(QUEUE_PAGE_DIR, 'page.js'), 'utf8');
  const html = readFileSync(
    join(import.meta.dirname, '..', '..', 'src', 'http', 'routes', 'queue-page-html.ts'),
    'utf8',
  );
  const plain = new Set([...`${page}\n${html}`.matchAll(/\bt\('([\w.]+)'/g)].map((m) => m[1]!));
  const plural = new Set([...page.matchAll(/\btn\('([\w.]+)'/g)].map((m) => m[1]!));
  return { plain, plural };
}

describe('the queue page translations', () => {
  it('come in English, German and French at least', () => {
    expect([...catalogues.keys()]).toEqual(expect.arrayContaining(['en', 'de', 'fr']));
    expect([...catalogues.keys()][0]).toBe('en');
  });

  it('have every key the page uses, in English', () => {
    const { plain, plural } = usedKeys();
    expect(plain.size).toBeGreaterThan(30);
    const missing = [...plain].filter((k) => english[k] === undefined);
    for (const k of plural) {
      if (english[`${k}.one`] === undefined || english[`${k}.other`] === undefined) {
        missing.push(`${k}.one/.other`);
      }
    }
    expect(missing, 'keys the page uses that en.json lacks').toEqual([]);
  });

  for (const [lang, messages] of catalogues) {
    if (lang === 'en') continue;
    it(`${lang}: English's keys exactly, with the same placeholders, none left in English`, () => {
      expect(Object.keys(messages).sort(), `${lang}.json keys`).toEqual(
        Object.keys(english).sort(),
      );
      for (const [key, text] of Object.entries(english)) {
        expect(placeholders(messages[key]!), `${lang}: ${key}`).toEqual(placeholders(text));
      }
      // a value copied from English untranslated (names and formats aside) is a gap too
      const same = Object.keys(english).filter(
        (k) => messages[k] === english[k] && !/^\{?\w*\}?[: ]*\{\w+\}$/.test(english[k]!),
      );
      expect(same.filter((k) => k !== 'product.title')).toEqual([]);
    });

    it(`${lang}: a plural form for every form the language has`, () => {
      const { plural } = usedKeys();
      const forms = new Intl.PluralRules(lang).resolvedOptions().pluralCategories;
      for (const key of plural) {
        // a form the catalogue lacks falls back to .other: it must be there
        expect(messages[`${key}.other`], `${lang}: ${key}.other`).toBeDefined();
        expect(forms).toContain('other');
      }
    });
  }
});

describe('the language of the page', () => {
  const langs = ['en', 'de', 'fr'];
  it('is ?lang= when the page has it', () => {
    expect(pickLanguage(langs, 'fr', 'de-DE,de;q=0.9')).toBe('fr');
    expect(pickLanguage(langs, 'FR-ca', undefined)).toBe('fr');
    expect(pickLanguage(langs, 'xx', 'de')).toBe('de');
  });
  it('is else the first of Accept-Language by q that the page has', () => {
    expect(pickLanguage(langs, undefined, 'ja;q=0.9, de-AT;q=0.8, fr;q=0.7')).toBe('de');
    expect(pickLanguage(langs, undefined, 'fr;q=0.5, de;q=0.9')).toBe('de');
    expect(pickLanguage(langs, undefined, 'de;q=0, fr-CH')).toBe('fr');
  });
  it('is else English', () => {
    expect(pickLanguage(langs, undefined, 'ja, zh;q=0.9, *;q=0.1')).toBe('en');
    expect(pickLanguage(langs, undefined, undefined)).toBe('en');
    expect(pickLanguage(langs, ['de'], '')).toBe('en');
  });
});
