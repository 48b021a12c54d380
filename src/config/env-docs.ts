/**
 * The variables as a person reads them: each one's default in words, and `.env.example` (every
 * variable with its default), both from {@link envSchema} so they cannot drift from it.
 */
import { envSchema } from './env.js';

export type EnvName = keyof typeof envSchema.shape;

/** Defaults that depend on other variables, said in words. */
const DERIVED_DEFAULTS: Partial<Record<EnvName, string>> = {
  REDIS_URL: 'redis://127.0.0.1:$LOCAL_REDIS_PORT (the one `up` runs)',
  DATABASE_URL: 'postgres://seckill@127.0.0.1:$LOCAL_PG_PORT/seckill (the one `up` runs)',
  AUTH_MODE: 'jwt (one-shot commands and `up`: dev)',
  ADMIN_TOKEN: 'none: the admin API is off (`up` generates one)',
  CORS_ORIGINS: "none (`up`: the storefront example's origins)",
  PATH: "the shell's PATH",
  WEBHOOK_ALLOW_PRIVATE: 'false (`up`: true)',
};

/** The schema's default of a variable, or undefined when it has none. */
export function schemaDefault(name: EnvName): string | undefined {
  const def = envSchema.shape[name]._zod.def as { type: string; defaultValue?: unknown };
  return def.type === 'default' ? String(def.defaultValue) : undefined;
}

/** A variable's default as help shows it. */
export function envDefault(name: EnvName): string {
  return DERIVED_DEFAULTS[name] ?? schemaDefault(name) ?? 'none';
}

/** `.env.example`: every variable, commented out at its default (so a copy changes nothing). */
export function envExample(): string {
  const lines = [
    '# Every environment variable seckill reads (src/config/env.ts), commented out at its default:',
    '# uncomment what you change. docs/configuration.md says what each one does.',
    '# seckill reads its process environment, not this file: `set -a; . ./.env; set +a`, or',
    '# `node --env-file=.env dist/src/cli.js serve`. Written by `npm run env:example`.',
  ];
  for (const name of Object.keys(envSchema.shape) as EnvName[]) {
    const description = envSchema.shape[name].description;
    const derived = DERIVED_DEFAULTS[name];
    lines.push('');
    if (description) lines.push(`# ${description}`);
    if (derived) lines.push(`# default: ${derived}`);
    // PATH's schema default is a fallback for an empty environment, not a value to copy
    lines.push(`# ${name}=${name === 'PATH' ? '' : (schemaDefault(name) ?? '')}`);
  }
  return `${lines.join('\n')}\n`;
}
