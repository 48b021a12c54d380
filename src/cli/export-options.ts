/** `seckill orders export`'s flags (node's parseArgs), apart so `--help` need not load the command. */
export const EXPORT_OPTIONS = {
  product: { type: 'string' },
  status: { type: 'string' },
  'updated-since': { type: 'string' },
  format: { type: 'string', default: 'ndjson' },
} as const;
