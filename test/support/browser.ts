/**
 * Debian's Chromium for the browser tests, driven by playwright-core; `undefined` (and a line on
 * stderr saying the tests are skipped) where none is installed (.ci/run installs it).
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) =>
  existsSync(p),
);

export function sayIfNoBrowser(testFile: string): void {
  if (!CHROMIUM) {
    process.stderr.write(
      `[${testFile}] no chromium (apt-get install chromium; .ci/run does): browser tests skipped\n`,
    );
  }
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM!,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}
