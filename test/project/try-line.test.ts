/**
 * The launcher's `try:` line (src/cli/try-line.ts) says how to name the shopper in each auth mode:
 * X-User-Id in dev, an HS256 JWT with JWT_SECRET, and in JWKS mode a token the identity provider
 * issued (never HS256 nor JWT_SECRET, which that mode may not have), with a way to try without it.
 */
import { describe, expect, it } from 'vitest';
import { tryLine } from '../../src/cli/try-line.js';
import type { Config } from '../../src/config/index.js';

const base = 'http://127.0.0.1:3000';
const auth = (o: Partial<Config['auth']>): Config['auth'] => ({
  mode: 'jwt',
  jwtSecret: undefined,
  jwksUrl: undefined,
  jwtIssuer: undefined,
  jwtAudience: undefined,
  adminToken: undefined,
  guessLimit: { name: 'admin-guess', rate: 10, periodMs: 60_000, burst: 10 },
  ...o,
});
const curl = `try: curl -si -X POST ${base}/seckill -H 'content-type: application/json'`;
const body = `-d '{"productId":"demo"}'`;

describe("the launcher's try: line", () => {
  it('names the shopper with X-User-Id in dev mode', () => {
    expect(tryLine(base, 'demo', auth({ mode: 'dev' }))).toBe(
      `${curl} -H 'x-user-id: alice' ${body}`,
    );
  });

  it('asks for an HS256 JWT signed with JWT_SECRET when that is the key', () => {
    expect(tryLine(base, 'demo', auth({ jwtSecret: 's'.repeat(32) }))).toBe(
      `${curl} -H "authorization: Bearer $JWT" ($JWT: an HS256 JWT signed with JWT_SECRET, sub = the shopper) ${body}`,
    );
  });

  it("in JWKS mode asks for the provider's token, not HS256 nor JWT_SECRET, and says how to try without one", () => {
    const line = tryLine(
      base,
      'demo',
      auth({
        jwksUrl: 'https://id.example/.well-known/jwks.json',
        jwtIssuer: 'https://id.example/',
        jwtAudience: 'seckill',
      }),
    );
    expect(line).toBe(
      `${curl} -H "authorization: Bearer $JWT" ($JWT: a token your identity provider issued ` +
        '(iss https://id.example/, aud seckill; RS256, ES256 or EdDSA with a key of ' +
        'https://id.example/.well-known/jwks.json), sub = the shopper; to try without one: ' +
        `AUTH_MODE=dev npm start) ${body}`,
    );
    expect(line).not.toMatch(/HS256|JWT_SECRET/);
  });

  it('with both keys names both ways', () => {
    const line = tryLine(
      base,
      'demo',
      auth({
        jwtSecret: 's'.repeat(32),
        jwksUrl: 'https://id.example/.well-known/jwks.json',
        jwtIssuer: 'https://id.example/',
        jwtAudience: 'seckill',
      }),
    );
    expect(line).toContain(
      '($JWT: an HS256 JWT signed with JWT_SECRET, or a token your identity provider issued',
    );
    expect(line).not.toContain('AUTH_MODE=dev');
  });
});
