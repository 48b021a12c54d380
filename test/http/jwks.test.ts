/**
 * Shoppers identified by the identity provider's tokens (JWT_JWKS_URL): a real JWKS server on a
 * local port, keys made and tokens signed with jose. RS256, ES256 and EdDSA tokens buy, on the
 * fast path and through Express; HS256 still works beside them; issuer, audience and expiry (with
 * a small skew) are held; a key rotation keeps working with one fetch; made-up key ids cannot make
 * the API hammer the provider; a provider that goes away does not stop tokens it already signed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { signJwt, verifyJwt } from '../../src/http/auth.js';
import { JwksKeys } from '../../src/http/jwks.js';
import { ProblemError } from '../../src/errors.js';
import { startApp, type RunningApp } from '../support/app.js';
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

/** The provider's JWKS endpoint: serves `published`, counts its fetches, can be made to fail. */
class Provider {
  published: SigningKey[] = [];
  fetches = 0;
  down = false;
  private server!: Server;
  url = '';

  async start() {
    this.server = createServer((_req, res) => {
      this.fetches++;
      if (this.down) {
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: this.published.map((k) => k.jwk) }));
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
    const refills = Math.floor((Date.now() - started) / 10_000);
    expect(provider.fetches - before).toBeLessThanOrEqual(3 + refills);
    expect(provider.fetches - before).toBeGreaterThanOrEqual(3);
    const afterWithdrawal = await buy(fast, await token(rsA, { sub: shopper() }));
    expect(afterWithdrawal.status).toBe(401);
    expect((await buy(fast, await token(rsB, { sub: shopper() }))).status).toBe(202);
  });
});
