/**
 * package.json's version, read once: the CLI's `--version` and /openapi.json's `info.version` say
 * the same. package.json is next to src/ in a checkout, next to dist/ in a build and the image.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

let found: string | undefined;

/** The package's version, or 'unknown' when no seckill package.json is found above this file. */
export function packageVersion(): string {
  if (found !== undefined) return found;
  found = 'unknown';
  for (const up of [['..'], ['..', '..']]) {
    try {
      const pkg = JSON.parse(
        readFileSync(join(import.meta.dirname, ...up, 'package.json'), 'utf8'),
      ) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'seckill' && pkg.version) return (found = pkg.version);
    } catch {
      // not there: the next candidate
    }
  }
  return found;
}
