/**
 * The field names of the hashes both Lua and TypeScript touch, defined once on each side: a
 * product's meta (lua/includes/productMeta.lua), a segment's state (lua/includes/segmentState.lua),
 * a waiting room's (lua/includes/roomState.lua) and the catalogue (lua/includes/catalogueHash.lua).
 * A Lua constant is the key here in upper snake case with the hash's prefix (`limitPerUser` of the
 * meta is `META_LIMIT_PER_USER`); test/inventory/lua-records.test.ts holds the two sides equal, and
 * `npm run structure` counts a field spelled anywhere else (recordFieldsOutsideCodecs).
 */

/** Product meta hash: {@link ProductMeta} property -> hash field. */
export const META_FIELD = {
  epoch: 'epoch',
  total: 'total',
  segments: 'segments',
  strategy: 'strategy',
  startsAt: 'startsAt',
  endsAt: 'endsAt',
  limitPerUser: 'limit',
  soldOutEpoch: 'soldOut',
  maxSegments: 'maxSegments',
  payWithinSeconds: 'payWithin',
  requireSaleToken: 'token',
  /** written by TypeScript (catalogue-numbers.ts), never by a script */
  number: 'n',
  /** the waiting room, "<admitPerSecond> <maxActive> <admittedForSeconds>": written by TypeScript (seeding.ts) */
  waitingRoom: 'room',
  /** the sale's price, "<amount> <currency>": written by TypeScript (seeding.ts) */
  price: 'price',
  /** "1" while an operator has paused the sale: written by TypeScript (drop/), cleared by a seed */
  paused: 'paused',
  /** the draw, "<entries open ms> <entries close ms> <buy within s>": written by TypeScript (seeding.ts) */
  draw: 'draw',
  /**
   * the product's own challenge at the door, "off", "pow [<clean floor ms>]", "turnstile" or
   * "hcaptcha"; absent: the deployment's (CHALLENGE). Written by TypeScript (seeding.ts)
   */
  challenge: 'challenge',
} as const;

/**
 * Segment state hash: property -> hash field. The sale window, limit and payment window are
 * copied from the meta at seeding, so deduct reads one hash; they keep the meta's names.
 */
export const STATE_FIELD = {
  epoch: 'epoch',
  stock: 'stock',
  /** units sold here, returned ones included */
  sold: 'sold',
  returned: 'returned',
  /** newest lock fencing token a deduct accepted */
  fence: 'fence',
  startsAt: 'startsAt',
  endsAt: 'endsAt',
  limitPerUser: 'limit',
  payWithinSeconds: 'payWithin',
  /**
   * "1": this epoch's spill sales are recorded (lua/deduct-7.lua), so one without its record was
   * lost. Absent on an epoch an older version seeded: its spills are trusted, as that version did.
   */
  recordsSpills: 'recordsSpills',
  /** net units an operator put on sale (+) or took off it (-) this epoch (lua/dropUnits-1.lua) */
  added: 'added',
  /**
   * units an operator took off sale this epoch, in all (lua/dropUnits-1.lua): with `added` (net),
   * what was put on and what was taken off. Absent on an epoch an older version seeded.
   */
  taken: 'taken',
} as const;

/** A waiting room's hash (RoomKeys.room): property -> hash field. */
export const ROOM_FIELD = {
  /** the last ticket given */
  next: 'next',
  /** every ticket up to this one is admitted */
  served: 'served',
  /** "1" once the room opened (its lobby shuffled into the line's head) */
  opened: 'opened',
  openedAt: 'openedAt',
  /** shoppers who joined before the opening */
  lobbyCount: 'pre',
  /** lobby places shuffled into tickets so far, and the shuffle's generator state */
  shuffled: 'shuffled',
  rng: 'rng',
  /** the newest admitter fencing token that wrote */
  admitterFence: 'admitterFence',
  /** the admission pacing's token bucket: its credit, and when it was last filled (ms) */
  credit: 'credit',
  lastAt: 'lastAt',
  /** seats freed by purchases (counted with the seat's removal): bounds the admitter's units read */
  done: 'done',
  /**
   * set while the room sleeps on a join ("join") or a freed seat ("seat"): the join or seat-done
   * script that finds it tells its process to wake the room (the next tick clears it)
   */
  asleep: 'asleep',
  /** admissions ending up to this time (ms) were told they are about to end */
  warnedTo: 'warnedTo',
  /** the sold out for good: tickets up to this one were told (their events written) */
  soldOutTo: 'soldOutTo',
} as const;

/**
 * The catalogue hash (Keys.catalogue): the last number given, and each product's number both ways,
 * `n:<number>` -> product id and `p:<product id>` -> number (prefixes).
 */
export const CATALOGUE_FIELD = {
  seq: 'seq',
  number: 'n:',
  product: 'p:',
} as const;

/** A product's draw hash in one epoch (lua/includes/drawState.lua). */
export const DRAW_FIELD = {
  /** entries ever taken: an entry's number in arrival order */
  seq: 'seq',
  /** entries held now */
  count: 'count',
  /** Redis ms the draw was closed by its admitter (unset: open, but for the clock) */
  closedAt: 'closedAt',
  /** the newest admitter fencing token that closed it */
  fence: 'closerFence',
} as const;
