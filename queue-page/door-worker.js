// The door's proof of work, solved off the page's thread (docs/fairness.md): an ALTCHA v1
// challenge asks for the number n in [0, maxnumber] whose SHA-256(salt + n), in hex, is the
// challenge. WebCrypto only, no dependency: the page's CSP allows scripts of its own origin.
'use strict';

const hex = (buffer) =>
  Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

/** Digests asked at once: one await per digest costs more than the hash itself. */
const BATCH = 1000;

self.onmessage = async (e) => {
  const { algorithm, challenge, salt, maxnumber } = e.data;
  const started = performance.now();
  const encoder = new TextEncoder();
  for (let from = 0; from <= maxnumber; from += BATCH) {
    const to = Math.min(maxnumber, from + BATCH - 1);
    const digests = await Promise.all(
      Array.from({ length: to - from + 1 }, (_, i) =>
        crypto.subtle.digest(algorithm, encoder.encode(salt + (from + i))),
      ),
    );
    const found = digests.findIndex((d) => hex(d) === challenge);
    if (found >= 0) {
      self.postMessage({ number: from + found, took: Math.round(performance.now() - started) });
      return;
    }
  }
  self.postMessage({ number: null, took: Math.round(performance.now() - started) });
};
