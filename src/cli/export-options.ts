/**
 * The flags of `seckill orders export`, `seckill webhooks` and `seckill jwks` (node's parseArgs),
 * apart so `--help` need not load the commands.
 */
export const EXPORT_OPTIONS = {
  product: { type: 'string' },
  status: { type: 'string' },
  'updated-since': { type: 'string' },
  format: { type: 'string', default: 'ndjson' },
} as const;

/** `seckill webhooks`'s flags. */
export const WEBHOOK_OPTIONS = {
  url: { type: 'string' },
  events: { type: 'string' },
  id: { type: 'string' },
  from: { type: 'string' },
  operator: { type: 'string' },
} as const;

/** `seckill jwks`'s flags. */
export const JWKS_OPTIONS = {
  operator: { type: 'string' },
} as const;
