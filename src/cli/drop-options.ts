/** `seckill drop`'s flags (node's parseArgs), apart so `--help` need not load the command. */
export const DROP_OPTIONS = {
  add: { type: 'string' },
  withdraw: { type: 'string' },
  'admit-per-second': { type: 'string' },
  'max-active': { type: 'string' },
  operator: { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

export const DROP_ACTIONS = ['pause', 'resume', 'end', 'units', 'pace'] as const;
