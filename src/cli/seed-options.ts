/** `seckill seed`'s flags (node's parseArgs), apart so `--help` need not load the command. */
export const SEED_OPTIONS = {
  total: { type: 'string' },
  segments: { type: 'string' },
  strategy: { type: 'string', default: 'segmented' },
  'limit-per-user': { type: 'string' },
  'pay-within': { type: 'string' },
  'require-sale-token': { type: 'boolean', default: false },
  'admit-per-second': { type: 'string' },
  'max-active': { type: 'string' },
  'admitted-for': { type: 'string' },
  'starts-at': { type: 'string' },
  'ends-at': { type: 'string' },
  price: { type: 'string' },
  currency: { type: 'string' },
  force: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false },
} as const;
