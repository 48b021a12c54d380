// The door in the browser (docs/fairness.md): before a join, ask the product's challenge
// (GET /products/:id/challenge) and answer it in the `Challenge` header. A proof of work is
// solved in a web worker (door-worker.js) while the page stays usable, and sent once the floor
// the challenge names has passed (the API refuses an earlier answer); a Turnstile or hCaptcha
// product gets its provider's widget, whose token is the answer. A door that asks nothing
// (409 no-challenge-needed) costs one request. Shared by the queue page and the storefront.
'use strict';

window.seckillDoor = (() => {
  const WIDGET = {
    turnstile: {
      script: 'https://challenges.cloudflare.com/turnstile/v0/api.js',
      global: 'turnstile',
    },
    hcaptcha: { script: 'https://js.hcaptcha.com/1/api.js', global: 'hcaptcha' },
  };
  let last = null;
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

  function solve(c, workerUrl) {
    return new Promise((resolve, reject) => {
      const worker = new Worker(workerUrl);
      worker.onmessage = (e) => {
        worker.terminate();
        if (e.data.number === null) reject(new Error('the challenge has no solution'));
        else resolve(e.data);
      };
      worker.onerror = (e) => {
        worker.terminate();
        reject(new Error(e.message || 'the solver failed'));
      };
      worker.postMessage({
        algorithm: c.algorithm,
        challenge: c.challenge,
        salt: c.salt,
        maxnumber: c.maxnumber,
      });
    });
  }

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = src;
      s.async = true;
      s.onload = resolve;
      s.onerror = () => reject(new Error(`could not load ${src}`));
      document.head.append(s);
    });
  }

  /** The provider's widget in `container`, its token once the shopper passed it. */
  async function widgetToken(kind, siteKey, o) {
    const w = WIDGET[kind];
    if (!window[w.global]) await loadScript(o.widgetScript?.[kind] ?? w.script);
    o.container.hidden = false;
    o.container.replaceChildren();
    const slot = document.createElement('div');
    o.container.append(slot);
    try {
      return await new Promise((resolve, reject) => {
        window[w.global].render(slot, {
          sitekey: siteKey,
          // Turnstile binds its token to the shopper: the API checks it is the same identity
          ...(kind === 'turnstile' && o.shopper && { cData: o.shopper }),
          callback: resolve,
          'error-callback': () => reject(new Error(`the ${kind} widget failed`)),
        });
      });
    } finally {
      o.container.hidden = true;
    }
  }

  /**
   * The headers a join needs: `{ headers }` (`{}` when the door asks nothing), or the API's
   * refusal of the challenge itself `{ res, json }` (to be shown as any refusal).
   * o.ask(): GET /products/:id/challenge as `{ res, json }`; o.checking(on): the page says it is
   * checking the browser; o.workerUrl: door-worker.js; o.container: where a widget renders;
   * o.shopper: the identity a Turnstile token is bound to; o.door: the product's `challenge`
   * as GET /products/:id names it (null: none; undefined: not known, ask).
   */
  async function pass(o) {
    // the product's line names its door: null, no challenge to ask for (a request saved)
    if (o.door === null) return { headers: {} };
    const asked = await o.ask();
    const { res, json } = asked;
    if (res.status === 409 && String(json.type).endsWith(':no-challenge-needed')) {
      return { headers: {} };
    }
    if (!res.ok) return asked;
    o.checking(true);
    try {
      if (json.kind === 'pow') {
        // the floor counts from the issue, which was before this answer arrived
        const notBefore = performance.now() + json.floorMs;
        const { number, took } = await solve(json, o.workerUrl);
        await sleep(notBefore - performance.now());
        // what this door cost, for a page (or a benchmark) to read: hashing, then the floor
        last = { solveMs: took, floorMs: json.floorMs };
        const payload = {
          algorithm: json.algorithm,
          challenge: json.challenge,
          number,
          salt: json.salt,
          signature: json.signature,
        };
        return { headers: { challenge: btoa(JSON.stringify(payload)) } };
      }
      return { headers: { challenge: await widgetToken(json.kind, json.siteKey, o) } };
    } finally {
      o.checking(false);
    }
  }

  return { pass, last: () => last };
})();
