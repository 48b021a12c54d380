/** The flags of `seckill orders export` and `seckill webhooks` (node's parseArgs), apart so `--help` need not load the commands. */
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
