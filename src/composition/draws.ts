/**
 * The draws of an API process (docs/draw.md): the entries' store, the steps its rooms' admitter
 * takes for a draw (the freeze, the beacon, the line), and the shopper's and the public side over
 * the draws repository.
 */
import { Counter } from 'prom-client';
import * as repo from '../db/draws-repository.js';
import { publishProductEvents } from '../events/index.js';
import { DRAW_EVENT_SOURCE, DrawPhase, DrawStore } from '../inventory/index.js';
import {
  DrawEntries,
  EntryViews,
  PollLimit,
  Transcripts,
  type Admission,
  type ChallengeCheck,
  type DrawRecordSource,
  type FairnessNotes,
} from '../services/index.js';
import type { Core } from './core.js';

export interface Draws {
  store: DrawStore;
  phase: DrawPhase;
  services: { entries: DrawEntries; views: EntryViews; transcripts: Transcripts };
}

export function startDraws(
  core: Core,
  admission: Admission,
  door: { door?: ChallengeCheck | undefined; fairnessNotes?: FairnessNotes | undefined } = {},
): Draws {
  const { config, inventory, db } = core;
  const store = new DrawStore(core.redis, core.keys, inventory.headroom);
  const refused = new Counter({
    name: 'seckill_draw_beacon_refusals_total',
    help: "Beacons a relay answered that failed verification against the draw's chain (refused)",
    labelNames: ['product'] as const,
    registers: [core.registry],
  });
  const phase = new DrawPhase({
    store,
    db,
    beacon: config.draw,
    logger: core.logger,
    onRefused: (product) => refused.inc({ product }),
    publish: (events) => publishProductEvents(db, DRAW_EVENT_SOURCE, events),
  });
  const records: DrawRecordSource = {
    record: (productId, epoch) => phase.record(productId, epoch),
    frozenEntryOf: (productId, epoch, userId) => repo.frozenEntryOf(db, productId, epoch, userId),
    entryIdsFrom: (productId, epoch, position, limit) =>
      repo.entryIdsFrom(db, productId, epoch, position, limit),
    entryIdsByRank: (productId, epoch, from, limit) =>
      repo.entryIdsByRank(db, productId, epoch, from, limit),
    boughtEntryIds: (productId, epoch) => repo.boughtEntryIds(db, productId, epoch),
  };
  const catalogue = inventory.catalogue;
  return {
    store,
    phase,
    services: {
      entries: new DrawEntries({
        catalogue,
        store,
        admission,
        maxEntries: config.room.maxPlaces,
        door: door.door,
        notes: door.fairnessNotes,
      }),
      views: new EntryViews({
        catalogue,
        store,
        records,
        saleTokenSecret: config.admission.saleTokenSecret,
        pollLimit: new PollLimit(config.admission.pollLimit),
      }),
      transcripts: new Transcripts({ catalogue, store, records, chain: config.draw.chain }),
    },
  };
}
