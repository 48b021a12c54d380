/**
 * Shoppers identified by the identity provider's tokens (JWT_JWKS_URL): a real JWKS server on a
 * local port, keys made and tokens signed with jose. RS256, ES256 and EdDSA tokens buy, on the
 * fast path and through Express; HS256 still works beside them; issuer, audience and expiry (with
 * a small skew) are held; a key rotation keeps working with one fetch; made-up key ids cannot make
 * the API hammer the provider; a provider that goes away does not stop tokens it already signed.
 * The set's body is bounded (a bigger one is refused, the keys held kept, the failure counted);
 * an http URL to another machine is refused at start; and an admin's refresh (API or CLI) makes
 * every API process fetch the set again at once, so a withdrawn (leaked) key stops verifying,
 * recorded in the audit log.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { signJwt, verifyJwt } from '../../src/http/auth.js';
import { jwksOf, JwksKeys, type JwksFetchFailed } from '../../src/http/jwks.js';
import { ProblemError } from '../../src/errors.js';
import { startApp, type RunningApp } from '../support/app.js';
import { runCli, waitFor } from '../support/cli.js';
import { useNamespace } from '../support/namespace.js';

const ns = useNamespace();
const ISSUER = 'https://id.shop.example/';
const AUDIENCE = 'seckill-api';
const SECRET = 'a-shared-hs256-secret-for-the-jwks-test-0123456789';

interface SigningKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function signingKey(alg: 'RS256' | 'ES256' | 'EdDSA'): Promise<SigningKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, {
    ...(alg === 'EdDSA' && { crv: 'Ed25519' }),
  });
  const kid = `${alg}-${randomBytes(4).toString('hex')}`;
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/**
 * The provider's JWKS endpoint: serves `published`, counts its fetches, can be made to fail, or
 * to answer `padding` bytes more (with a Content-Length, or streamed without one).
 */
class Provider {
  published: SigningKey[] = [];
  fetches = 0;
  down = false;
  padding = 0;
  streamed = false;
  /** bytes of the last streamed answer written before the client hung up, and whether all were */
  lastStream = { written: 0, complete: false, closed: false };
  private server!: Server;
  url = '';

  async start() {
    this.server = createServer((_req, res) => {
      this.fetches++;
      if (this.down) {
        res.writeHead(503).end();
        return;
      }
      const body = JSON.stringify({
        keys: this.published.map((k) => k.jwk),
        ...(this.padding > 0 && !this.streamed && { padding: 'x'.repeat(this.padding) }),
      });
      if (!this.streamed) {
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        });
        res.end(body);
        return;
      }
      // chunked, no Content-Length: the keys, then `padding` bytes of white space
      res.writeHead(200, { 'content-type': 'application/json' });
      const stream = { written: 0, complete: false, closed: false };
      this.lastStream = stream;
      const chunk = Buffer.alloc(64 * 1024, ' ');
      res.write(body.slice(0, -1));
      const more = () => {
        while (stream.written < this.padding && !res.destroyed) {
          stream.written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        if (res.destroyed) return;
        stream.complete = true;
        res.end('}');
      };
      res.on('close', () => {
        stream.closed = true;
        res.destroy();
      });
      more();
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/.well-known/jwks.json`;
    return this;
  }

  close() {
    return new Promise((r) => this.server.close(r));
  }
}

function token(
  key: SigningKey,
  claims: Record<string, unknown> = {},
  o: { kid?: string; expiresIn?: number } = {},
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: ISSUER,
    aud: AUDIENCE,
    sub: 'alice',
    exp: now + (o.expiresIn ?? 60),
    ...claims,
  })
    .setProtectedHeader({ alg: key.alg, kid: o.kid ?? key.kid, typ: 'JWT' })
    .sign(key.privateKey);
}

describe('the JWKS settings', () => {
  it('needs the issuer and the audience with JWT_JWKS_URL, and accepts it without JWT_SECRET', () => {
    const base = { AUTH_MODE: 'jwt', JWT_JWKS_URL: 'https://id.example/jwks.json' };
    expect(() => loadConfig(base)).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, JWT_ISSUER: ISSUER })).toThrow(/JWT_AUDIENCE/);
    expect(() => loadConfig({ ...base, JWT_JWKS_URL: 'ftp://id.example/jwks' })).toThrow(
      /JWT_JWKS_URL/,
    );
    const c = loadConfig({ ...base, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE });
    expect(c.auth.jwksUrl).toBe('https://id.example/jwks.json');
    expect(c.auth.jwtSecret).toBeUndefined();
  });

  it('refuses plain http to another machine, and takes it to loopback', () => {
    const env = { AUTH_MODE: 'jwt', JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };
    for (const remote of [
      'http://id.example/jwks.json',
      'http://10.0.0.5:8080/jwks.json',
      'http://[2001:db8::1]/jwks.json',
      'http://127.example/jwks.json',
    ]) {
      expect(() => loadConfig({ ...env, JWT_JWKS_URL: remote }), remote).toThrow(
        /JWT_JWKS_URL: plain http is only for a provider on this machine/,
      );
    }
    for (const local of [
      'http://127.0.0.1:8080/jwks.json',
      'http://127.1.2.3/jwks.json',
      'http://localhost:8080/jwks.json',
      'http://id.localhost/jwks.json',
      'http://[::1]:8080/jwks.json',
    ]) {
      expect(loadConfig({ ...env, JWT_JWKS_URL: local }).auth.jwksUrl, local).toBe(local);
    }
  });
});

describe('JwksKeys (a clock of its own)', () => {
  let provider: Provider;
  let rs: SigningKey;
  beforeAll(async () => {
    provider = await new Provider().start();
    rs = await signingKey('RS256');
  });
  afterAll(() => provider.close());

  const verify = (keys: JwksKeys, t: string) =>
    verifyJwt(t, { jwks: keys, issuer: ISSUER, audience: AUDIENCE });

  it('refreshes for unknown key ids at most its burst, then one each refill period', async () => {
    provider.published = [rs];
    provider.fetches = 0;
    let now = 1_000_000;
    const keys = new JwksKeys({
      url: provider.url,
      refreshBurst: 3,
      refillMs: 10_000,
      now: () => now,
    });
    await verify(keys, await token(rs));
    expect(provider.fetches).toBe(1);
    // 20 made-up ids, one after another: 3 refreshes, then refused without asking
    for (let i = 0; i < 20; i++) {
      await expect(verify(keys, await token(rs, {}, { kid: `made-up-${i}` }))).rejects.toThrow(
        /not one of the identity provider's keys/,
      );
    }
    expect(provider.fetches).toBe(4);
    now += 9_999;
    await expect(verify(keys, await token(rs, {}, { kid: 'x1' }))).rejects.toThrow(ProblemError);
    expect(provider.fetches).toBe(4);
    now += 1;
    await expect(verify(keys, await token(rs, {}, { kid: 'x2' }))).rejects.toThrow(ProblemError);
    expect(provider.fetches).toBe(5);
    // the known key never waits for the bucket
    expect((await verify(keys, await token(rs))).sub).toBe('alice');
    expect(provider.fetches).toBe(5);
  });

  it('shares one fetch among the tokens that ask at once', async () => {
    provider.published = [rs];
    provider.fetches = 0;
    const keys = new JwksKeys({ url: provider.url });
    const t = await token(rs);
    const all = await Promise.all(Array.from({ length: 50 }, () => verify(keys, t)));
    expect(all.map((c) => c.sub)).toEqual(Array(50).fill('alice'));
    expect(provider.fetches).toBe(1);
  });

  it('fetches again once the set is older than maxAge, and keeps the held keys through an outage', async () => {
    provider.published = [rs];
    provider.fetches = 0;
    provider.down = false;
    let now = 5_000_000;
    const keys = new JwksKeys({ url: provider.url, maxAgeMs: 60_000, now: () => now });
    await verify(keys, await token(rs));
    now += 60_000;
    provider.down = true;
    // the provider is away: the keys held still verify what it signed
    expect((await verify(keys, await token(rs))).sub).toBe('alice');
    expect(provider.fetches).toBe(2);
    // and it is not asked again on every token meanwhile
    await verify(keys, await token(rs));
    expect(provider.fetches).toBe(2);
    now += 30_000;
    provider.down = false;
    await verify(keys, await token(rs));
    expect(provider.fetches).toBe(3);
  });

  it('refuses a set larger than its bound, keeps the keys held, and says why', async () => {
    provider.published = [rs];
    provider.down = false;
    let now = 7_000_000;
    const keys = new JwksKeys({ url: provider.url, maxAgeMs: 60_000, now: () => now });
    const failures: JwksFetchFailed[] = [];
    keys.onFetchFailed((f) => failures.push(f));
    try {
      await verify(keys, await token(rs));
      expect(keys.loads).toBe(1);
      // 300 kB with a Content-Length, then 40 MB streamed without one
      for (const [padding, streamed] of [
        [300_000, false],
        [40 * 1024 * 1024, true],
      ] as const) {
        provider.padding = padding;
        provider.streamed = streamed;
        now += 60_000;
        expect((await verify(keys, await token(rs))).sub).toBe('alice');
      }
      expect(keys.loads).toBe(1);
      expect(failures).toEqual([
        {
          reason: 'too-large',
          detail: expect.stringMatching(/larger than 262144 bytes \(Content-Length 3\d{5}\)/),
          keptHeldKeys: true,
        },
        {
          reason: 'too-large',
          detail: expect.stringMatching(/larger than 262144 bytes \(\d+ bytes read so far\)/),
          keptHeldKeys: true,
        },
      ]);
      // the stream was cut: the 40 MB were never all sent
      await waitFor(
        'the provider to see the hang-up',
        async () => provider.lastStream.closed,
        10_000,
        20,
      );
      expect(provider.lastStream.complete).toBe(false);
      expect(provider.lastStream.written).toBeLessThan(40 * 1024 * 1024);
      // never held a set: too large is a 503, like a provider away
      const fresh = new JwksKeys({ url: provider.url });
      const err = (await verify(fresh, await token(rs)).catch((e: unknown) => e)) as ProblemError;
      expect(err.status).toBe(503);
      expect(err.detail).toMatch(/larger than 262144 bytes/);
    } finally {
      provider.padding = 0;
      provider.streamed = false;
    }
  });

  it('refetches on demand, after a fetch in flight, past the bucket and the max age', async () => {
    provider.published = [rs];
    provider.down = false;
    provider.fetches = 0;
    const keys = new JwksKeys({ url: provider.url, refreshBurst: 0 });
    await verify(keys, await token(rs));
    const other = await signingKey('ES256');
    provider.published = [other];
    expect(await keys.refetch()).toEqual({ kids: [other.kid] });
    expect(provider.fetches).toBe(2);
    await expect(verify(keys, await token(rs))).rejects.toThrow(/not one of the identity/);
    provider.down = true;
    await expect(keys.refetch()).rejects.toThrow(
      /could not be fetched \(status: the JWKS answered 503\)/,
    );
    // the keys held are kept
    expect((await verify(keys, await token(other))).sub).toBe('alice');
    provider.down = false;
  });

  it('refuses with 503 while it has never had the keys', async () => {
    provider.published = [rs];
    provider.down = true;
    const keys = new JwksKeys({ url: provider.url });
    const err = (await verify(keys, await token(rs)).catch((e: unknown) => e)) as ProblemError;
    expect(err).toBeInstanceOf(ProblemError);
    expect(err.status).toBe(503);
    expect(err.code).toBe('identity-provider-unavailable');
    provider.down = false;
    expect((await verify(keys, await token(rs))).sub).toBe('alice');
  });
});

describe('the API with JWT_JWKS_URL', () => {
  let provider: Provider;
  let fast: RunningApp;
  let slow: RunningApp;
  let rsA: SigningKey;
  let rsB: SigningKey;
  let es: SigningKey;
  let ed: SigningKey;
  const productId = `j${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    [rsA, rsB, es, ed] = await Promise.all([
      signingKey('RS256'),
      signingKey('RS256'),
      signingKey('ES256'),
      signingKey('EdDSA'),
    ]);
    provider = await new Provider().start();
    provider.published = [rsA, es, ed];
    const env = {
      AUTH_MODE: 'jwt',
      JWT_JWKS_URL: provider.url,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      JWT_SECRET: SECRET,
    };
    fast = await startApp(ns.config({ ...env, FAST_PATH: 'true' }));
    slow = await startApp(ns.config({ ...env, FAST_PATH: 'false' }));
    const res = await fetch(`${fast.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ strategy: 'segmented', segments: 2, total: 1_000, limitPerUser: 1 }),
    });
    expect(res.status).toBe(201);
  });
  afterAll(async () => {
    await fast?.close();
    await slow?.close();
    await provider?.close();
  });

  async function buy(app: RunningApp, bearer: string) {
    const res = await fetch(`${app.url}/seckill`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ productId }),
    });
    const body = (await res.json()) as { detail?: string };
    return { status: res.status, detail: body.detail };
  }
  const shopper = () => `s${randomBytes(5).toString('hex')}`;

  it('sells to RS256, ES256 and EdDSA tokens of the provider and to HS256 ones, on both paths', async () => {
    for (const app of [fast, slow]) {
      for (const key of [rsA, es, ed]) {
        expect(await buy(app, await token(key, { sub: shopper() })), key.alg).toEqual({
          status: 202,
          detail: undefined,
        });
      }
      const now = Math.floor(Date.now() / 1000);
      const hs = signJwt({ iss: ISSUER, aud: AUDIENCE, sub: shopper(), exp: now + 60 }, SECRET);
      expect((await buy(app, hs)).status).toBe(202);
    }
  });

  it('holds the issuer, the audience and the expiry (30 s of skew)', async () => {
    const cases: Array<[string, Promise<string>, RegExp]> = [
      ['another issuer', token(rsA, { iss: 'https://evil.example/' }), /iss/],
      ['another audience', token(rsA, { aud: 'another-app' }), /aud/],
      ['expired a minute ago', token(rsA, {}, { expiresIn: -60 }), /expired/],
      ['no sub', token(rsA, { sub: undefined }), /sub/],
    ];
    for (const [what, t, why] of cases) {
      const r = await buy(fast, await t);
      expect(r.status, what).toBe(401);
      expect(r.detail, what).toMatch(why);
    }
    // a provider clock a few seconds ahead: a token that just expired here still buys
    expect((await buy(fast, await token(rsA, { sub: shopper() }, { expiresIn: -10 }))).status).toBe(
      202,
    );
  });

  it('refuses a token signed by a key the provider does not publish, under a published kid', async () => {
    const forger = await signingKey('RS256');
    const forged = await new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: shopper() })
      .setExpirationTime('1m')
      .setProtectedHeader({ alg: 'RS256', kid: rsA.kid })
      .sign(forger.privateKey);
    const r = await buy(fast, forged);
    expect(r.status).toBe(401);
    expect(r.detail).toMatch(/signature is not valid/);
    // an HS256 token made with the public key's text (the algorithm confusion) is not a key here
    const confused = signJwt(
      { iss: ISSUER, aud: AUDIENCE, sub: shopper(), exp: Math.floor(Date.now() / 1000) + 60 },
      JSON.stringify(rsA.jwk),
    );
    expect((await buy(fast, confused)).status).toBe(401);
  });

  it('keeps working through a key rotation, and made-up key ids cannot hammer the provider', async () => {
    expect((await buy(fast, await token(rsA, { sub: shopper() }))).status).toBe(202);
    // the provider publishes B beside A and starts signing with B
    provider.published = [rsA, rsB, es, ed];
    const before = provider.fetches;
    const started = Date.now();
    expect((await buy(fast, await token(rsB, { sub: shopper() }))).status).toBe(202);
    expect(provider.fetches).toBe(before + 1);
    // tokens A signed before the rotation still buy, without a fetch
    expect((await buy(fast, await token(rsA, { sub: shopper() }))).status).toBe(202);
    expect(provider.fetches).toBe(before + 1);
    // A withdrawn: a token of A is refused once the set is fetched again
    provider.published = [rsB, es, ed];
    // 200 tokens under made-up key ids: the bucket's 2 refreshes left, and one per 10 s after
    let refused = 0;
    for (let i = 0; i < 200; i++) {
      const r = await buy(fast, await token(rsB, { sub: shopper() }, { kid: `made-up-${i}` }));
      if (r.status === 401) refused++;
    }
    expect(refused).toBe(200);
    // the bucket refills continuously (a part of a token may be there already at `started`), so
    // a span of T holds at most ceil(T / 10 s) refills
    const refills = Math.ceil((Date.now() - started) / 10_000);
    expect(provider.fetches - before).toBeLessThanOrEqual(3 + refills);
    expect(provider.fetches - before).toBeGreaterThanOrEqual(3);
    const afterWithdrawal = await buy(fast, await token(rsA, { sub: shopper() }));
    expect(afterWithdrawal.status).toBe(401);
    expect((await buy(fast, await token(rsB, { sub: shopper() }))).status).toBe(202);
  });
});

describe('a leaked key withdrawn: every API process fetches the keys again on demand', () => {
  // two API processes, each with its own provider URL (so each holds its own set here)
  let providers: Provider[];
  let apps: RunningApp[];
  let good: SigningKey;
  let leaked: SigningKey;
  const productId = `k${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    [good, leaked] = await Promise.all([signingKey('RS256'), signingKey('RS256')]);
    providers = await Promise.all([new Provider().start(), new Provider().start()]);
    for (const p of providers) p.published = [good, leaked];
    apps = await Promise.all(
      providers.map((p) =>
        startApp(
          ns.config({
            AUTH_MODE: 'jwt',
            JWT_JWKS_URL: p.url,
            JWT_ISSUER: ISSUER,
            JWT_AUDIENCE: AUDIENCE,
            JWT_SECRET: SECRET,
          }),
        ),
      ),
    );
    const res = await fetch(`${apps[0]!.url}/admin/products/${productId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ strategy: 'segmented', segments: 2, total: 1_000, limitPerUser: 1 }),
    });
    expect(res.status).toBe(201);
  });
  afterAll(async () => {
    for (const a of apps ?? []) await a.close();
    for (const p of providers ?? []) await p.close();
  });

  const buy = async (app: RunningApp, key: SigningKey) =>
    (
      await fetch(`${app.url}/seckill`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${await token(key, { sub: `s${randomBytes(5).toString('hex')}` })}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ productId }),
      })
    ).status;
  const refresh = (app: RunningApp, operator = 'sec-team') =>
    fetch(`${app.url}/admin/jwks/refresh`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ns.adminToken}`, 'x-operator': operator },
    });
  const loadsOf = (i: number) => jwksOf(providers[i]!.url).loads;
  async function refreshEntries() {
    const res = await fetch(`${apps[0]!.url}/admin/audit`, {
      headers: { authorization: `Bearer ${ns.adminToken}` },
    });
    const { entries } = (await res.json()) as {
      entries: Array<{ action: string; outcome: string; actor: unknown; result: unknown }>;
    };
    return entries.filter((e) => e.action === 'jwks-refresh');
  }

  it('refuses its tokens everywhere at once, from the API', async () => {
    for (const app of apps) expect(await buy(app, leaked)).toBe(202);
    for (const p of providers) p.published = [good];
    // each process still holds the set it fetched: the withdrawn key works there for minutes
    for (const app of apps) expect(await buy(app, leaked)).toBe(202);

    const before = [loadsOf(0), loadsOf(1)];
    const res = await refresh(apps[0]!);
    expect(res.status).toBe(200);
    // both API processes heard it (the one asked ignores its own notice: it fetched already)
    expect(await res.json()).toEqual({ kids: [good.kid], processes: 2 });
    expect(loadsOf(0)).toBe(before[0]! + 1);
    await waitFor(
      'the other API process to fetch its set',
      async () => loadsOf(1) === before[1]! + 1,
      10_000,
      20,
    );
    for (const app of apps) expect(await buy(app, leaked)).toBe(401);
    for (const app of apps) expect(await buy(app, good)).toBe(202);
    const [entry] = await refreshEntries();
    expect(entry).toMatchObject({
      outcome: 'done',
      actor: { via: 'token', operator: 'sec-team' },
      result: { kids: [good.kid], processes: 2 },
    });
  });

  it('does the same from the CLI, recorded as the CLI', async () => {
    const before = [loadsOf(0), loadsOf(1)];
    const run = runCli(['jwks', 'refresh', '--operator', 'ops-bot'], {
      PATH: process.env.PATH ?? '',
      ...(ns.clustered
        ? {
            REDIS_CLUSTER_NODES: ns.redisTarget
              .cluster!.map((n) => `${n.host}:${n.port}`)
              .join(','),
          }
        : { REDIS_URL: ns.redisUrl }),
      DATABASE_URL: ns.databaseUrl,
      KEY_PREFIX: ns.id,
    });
    expect(await run.exited, run.stderr()).toBe(0);
    expect(JSON.parse(run.stdout())).toEqual({ processes: 2 });
    await waitFor(
      'both API processes to fetch their sets',
      async () => loadsOf(0) === before[0]! + 1 && loadsOf(1) === before[1]! + 1,
      10_000,
      20,
    );
    const [entry] = await refreshEntries();
    expect(entry).toMatchObject({
      outcome: 'done',
      actor: { via: 'cli', operator: 'ops-bot' },
      result: { processes: 2 },
    });
  }, 120_000);

  it('answers 503 when the provider is away, keeps the keys held and tells nobody', async () => {
    const before = loadsOf(1);
    const fetchesBefore = providers[1]!.fetches;
    providers[0]!.down = true;
    try {
      const res = await refresh(apps[0]!);
      expect(res.status).toBe(503);
      expect(((await res.json()) as { type: string }).type).toMatch(
        /identity-provider-unavailable$/,
      );
      expect(await buy(apps[0]!, good)).toBe(202);
      const [entry] = await refreshEntries();
      expect(entry).toMatchObject({ outcome: 'failed' });
      // nobody else was told: the other process fetched nothing
      expect(providers[1]!.fetches).toBe(fetchesBefore);
      expect(loadsOf(1)).toBe(before);
    } finally {
      providers[0]!.down = false;
    }
  });
});
