/**
 * Admin side of the inventory: seed a product's stock over its segments. Seeding opens a new
 * epoch (lua/beginSeed-1.lua refuses while the sale is live unless forced), seeds every segment
 * (lua/seedSegment-4.lua), gives it a catalogue number and puts it in the active set, tells every
 * API process, and records the product in PostgreSQL.
 */
import type { RedisClient } from '../../redis/connection.js';
import type { Db } from '../../db/index.js';
import { recordSalePrice, upsertProduct } from '../../db/products-repository.js';
import { recordDrawSettings } from '../../db/draws-repository.js';
import type { Strategy } from '../../db/schema.js';
import type { Keys } from '../../redis/keys.js';
import { execByNode } from '../../redis/batch.js';
import { registerScripts } from '../../redis/scripts.js';
import { touchActive } from './active-set.js';
import type { Catalogue } from './catalogue.js';
import { giveCatalogueNumber } from './catalogue-numbers.js';
import { SaleError } from '../errors.js';
import { splitStock } from '../layout.js';
import { beginSeed, queueSeedSegment, setWindow } from './protocol.js';
import { PAUSED_STARTS_AT } from '../records/segment-state.js';
import { carriedMarkers, unitsByShopper, type CarriedMarker } from './carry.js';
import { encodeEvent } from '../records/product-events.js';
import {
  decodeMeta,
  encodeChallenge,
  encodeDrawWindow,
  encodePrice,
  encodeRoomSettings,
  META_FIELD,
  type Price,
  type ProductChallenge,
  type RoomSettings,
} from '../records/product-meta.js';

export interface SeedSpec {
  total: number;
  /** 1..1024; `global` takes 1 */
  segments: number;
  strategy: Strategy;
  startsAt?: Date | undefined;
  endsAt?: Date | undefined;
  /** default 1 */
  limitPerUser?: number | undefined;
  /** seconds a buyer has to pay; unset: every sale is final */
  payWithinSeconds?: number | undefined;
  /** purchases need a sale token (POST /products/:id/sale-token) */
  requireSaleToken?: boolean | undefined;
  /** purchases need a place in the product's waiting room (docs/waiting-room.md) */
  waitingRoom?: RoomSettings | undefined;
  /** the unit price of this sale's orders; unset: unpriced */
  price?: Price | undefined;
  /** sold by a draw (docs/draw.md): its entry window, the time to buy, the screening rules */
  draw?: DrawSpec | undefined;
  /** the product's challenge at the door; null: none; unset: the deployment's (CHALLENGE) */
  challenge?: ProductChallenge | null | undefined;
}

export interface DrawSpec {
  entriesOpenAt: Date;
  entriesCloseAt: Date;
  buyWithinSeconds: number;
  /** the screening rules the shop sets (src/draw/screening.ts's DrawRules) */
  rules: { maxEntriesPerAddressBlock: number | null; denyList: string[] };
}

/**
 * A draw's waiting room, its cascade: every winner admitted at once (the pace and the seats do not
 * bind: the units left do, at limitPerUser a seat), each admission lasting the time to buy.
 */
export const drawRoomSettings = (draw: DrawSpec): RoomSettings => ({
  admitPerSecond: 100_000,
  maxActive: 1_000_000,
  admittedForSeconds: draw.buyWithinSeconds,
});

export interface SeedResult {
  productId: string;
  epoch: number;
  segments: number[];
  /** shoppers whose purchase counts the new epoch carries (0: none, or discarded) */
  carried: number;
}

export interface SeedOptions {
  /** reseed while the sale runs */
  force?: boolean | undefined;
  /** what the request accepts to throw away: the room's line, the shoppers' purchase counts */
  discard?: { line?: boolean; purchaseCounts?: boolean } | undefined;
}

/** Carried markers written per pipeline. */
const CARRY_BATCH = 1_000;

export interface InventoryDeps {
  redis: RedisClient;
  keys: Keys;
  db: Db;
  catalogue?: Catalogue | undefined;
}

/**
 * Seeds (or reseeds) a product: `total / segments` units per segment, the remainder one apiece on
 * the first ones. Segments a previous epoch had beyond the new count are emptied. A reseed carries
 * every shopper's purchase count into the new epoch (carry.ts) unless `discard.purchaseCounts`.
 * @throws SaleError `sale-live` when the current sale is running and `force` is not set;
 *   `line-discarded` when the sale's room holds a line and `discard.line` is not set
 */
export async function seedProduct(
  deps: InventoryDeps,
  productId: string,
  spec: SeedSpec,
  opts: SeedOptions = {},
): Promise<SeedResult> {
  await refuseDroppingALine(deps, productId, opts);
  const startsAt = spec.startsAt?.getTime() ?? 0;
  const endsAt = spec.endsAt?.getTime() ?? 0;
  const limitPerUser = spec.limitPerUser ?? 1;
  const payWithinSeconds = spec.payWithinSeconds ?? 0;
  const begun = await beginSeed(
    deps.redis,
    deps.keys.product(productId),
    {
      ...spec,
      startsAt,
      endsAt,
      limitPerUser,
      payWithinSeconds,
      // an admission is a sale token: the purchase path checks nothing new
      requireSaleToken:
        (spec.requireSaleToken ?? false) ||
        spec.waitingRoom !== undefined ||
        spec.draw !== undefined,
    },
    opts.force ?? false,
  );
  if (begun.code === 'live') {
    throw new SaleError({
      code: 'sale-live',
      message: `the sale of "${productId}" (epoch ${begun.epoch}) is live; reseeding it needs force`,
    });
  }
  await writeDraw(deps, productId, begun.epoch, spec.draw);
  await writeRoomSettings(
    deps,
    productId,
    spec.waitingRoom ?? (spec.draw && drawRoomSettings(spec.draw)),
  );
  await writePrice(deps, productId, begun.epoch, spec.price);
  await writeChallenge(deps, productId, spec.challenge);
  const stocks = splitStock(spec.total, spec.segments);
  registerScripts(deps.redis);
  const indexes = Array.from(
    { length: Math.max(spec.segments, begun.previousSegments) },
    (_, i) => i,
  );
  // carrying: the segments start paused until every carried count is in place
  const carry = begun.previousSegments > 0 && !opts.discard?.purchaseCounts;
  const dropped = await execByNode(
    deps.redis,
    indexes,
    (i) => deps.keys.segment(productId, i).state,
    (pipeline, i) =>
      queueSeedSegment(pipeline, deps.keys.segment(productId, i), {
        epoch: begun.epoch,
        stock: stocks[i] ?? 0,
        startsAt: carry ? PAUSED_STARTS_AT : startsAt,
        endsAt,
        limitPerUser,
        payWithinSeconds,
        carry,
      }),
  );
  const carried = carry ? unitsByShopper(dropped.map((replies) => replies[0])) : new Map();
  if (carry) {
    await writeCarried(deps, productId, spec.segments, carried);
    for (let i = 0; i < spec.segments; i++) {
      await setWindow(deps.redis, deps.keys.segment(productId, i), begun.epoch, { startsAt });
    }
  }
  await giveCatalogueNumber(deps, productId);
  await deps.redis.sadd(deps.keys.products(), productId);
  // active until its sale starts or ends (then quiet a while): the sweeper walks it meanwhile
  await touchActive(deps, productId, Math.max(startsAt, endsAt));
  if (deps.catalogue) await deps.catalogue.announceReseed(productId, begun.epoch);
  else {
    await deps.redis.spublish(
      deps.keys.product(productId).events,
      encodeEvent({ kind: 'reseed', epoch: begun.epoch }),
    );
  }

  const row = {
    total: spec.total,
    segments: spec.segments,
    strategy: spec.strategy,
    limit_per_user: limitPerUser,
    starts_at: spec.startsAt ?? null,
    ends_at: spec.endsAt ?? null,
    pay_within_seconds: spec.payWithinSeconds ?? null,
    epoch: begun.epoch,
  };
  await upsertProduct(deps.db, productId, row);
  return { productId, epoch: begun.epoch, segments: stocks, carried: carried.size };
}

/**
 * A reseed throws the current epoch's line away (a room's places belong to its epoch): refused
 * while the sale has not ended and its room holds anyone, unless the request says so.
 */
async function refuseDroppingALine(
  deps: InventoryDeps,
  productId: string,
  opts: SeedOptions,
): Promise<void> {
  if (opts.discard?.line) return;
  const meta = decodeMeta(await deps.redis.hgetall(deps.keys.product(productId).meta));
  if (!meta?.waitingRoom || (meta.endsAt > 0 && Date.now() >= meta.endsAt)) return;
  // a draw's entries are its line before the draw
  const places = meta.draw
    ? await deps.redis.hlen(deps.keys.draw(productId, meta.epoch).entries)
    : await deps.redis.hlen(deps.keys.room(productId, meta.epoch).places);
  if (places === 0) return;
  throw new SaleError({
    code: 'line-discarded',
    message:
      `the waiting room of "${productId}" (epoch ${meta.epoch}) holds ${places} shoppers: a reseed ` +
      'throws their places away; say so to go on (?discard=line, CLI --discard line), or end the sale first',
  });
}

/** Each shopper's carried units, on their home segment of the new layout (carry.ts). */
async function writeCarried(
  deps: InventoryDeps,
  productId: string,
  segments: number,
  units: ReadonlyMap<string, number>,
): Promise<void> {
  const markers = carriedMarkers(units, segments);
  const buyers = (carried: CarriedMarker) => deps.keys.segment(productId, carried.segment).buyers;
  for (let from = 0; from < markers.length; from += CARRY_BATCH) {
    await execByNode(deps.redis, markers.slice(from, from + CARRY_BATCH), buyers, (pipeline, c) =>
      pipeline.hset(buyers(c), c.userId, c.marker),
    );
  }
}

/**
 * The new epoch's price, before any of its stock is: in PostgreSQL per epoch (the orders of the
 * epoch copy it as their rows are inserted) and in the meta (the shop's view of the product).
 */
async function writePrice(
  deps: InventoryDeps,
  productId: string,
  epoch: number,
  price: Price | undefined,
): Promise<void> {
  const meta = deps.keys.product(productId).meta;
  if (!price) {
    await deps.redis.hdel(meta, META_FIELD.price);
    return;
  }
  await recordSalePrice(deps.db, productId, epoch, price);
  await deps.redis.hset(meta, META_FIELD.price, encodePrice(price));
}

/**
 * The new epoch's draw (or none): its settings and rules in PostgreSQL (the freeze reads them),
 * its window in the meta, before any process loads the epoch.
 */
async function writeDraw(
  deps: InventoryDeps,
  productId: string,
  epoch: number,
  draw: DrawSpec | undefined,
): Promise<void> {
  const meta = deps.keys.product(productId).meta;
  if (!draw) {
    await deps.redis.hdel(meta, META_FIELD.draw);
    return;
  }
  await recordDrawSettings(deps.db, productId, epoch, draw);
  const window = {
    entriesOpenAt: draw.entriesOpenAt.getTime(),
    entriesCloseAt: draw.entriesCloseAt.getTime(),
    buyWithinSeconds: draw.buyWithinSeconds,
  };
  await deps.redis.hset(meta, META_FIELD.draw, encodeDrawWindow(window));
}

/** The new epoch's challenge at the door (none: the deployment's), before any process loads it. */
async function writeChallenge(
  deps: InventoryDeps,
  productId: string,
  challenge: ProductChallenge | null | undefined,
): Promise<void> {
  const meta = deps.keys.product(productId).meta;
  if (challenge === undefined) await deps.redis.hdel(meta, META_FIELD.challenge);
  else await deps.redis.hset(meta, META_FIELD.challenge, encodeChallenge(challenge));
}

/** The new epoch's waiting room (or none, a reseed without one), before any process loads it. */
async function writeRoomSettings(
  deps: InventoryDeps,
  productId: string,
  room: RoomSettings | undefined,
): Promise<void> {
  const meta = deps.keys.product(productId).meta;
  if (!room) {
    await deps.redis.hdel(meta, META_FIELD.waitingRoom);
    await deps.redis.srem(deps.keys.rooms(), productId);
    return;
  }
  await deps.redis.hset(meta, META_FIELD.waitingRoom, encodeRoomSettings(room));
  await deps.redis.sadd(deps.keys.rooms(), productId);
}
