/**
 * What the API's routes tell the fairness notes (docs/fairness.md): a refused purchase of a plain
 * sale and a follow of the queue page's decoy link, each noted in the product's current sale.
 */
import type { FairnessNotes } from '../services/index.js';
import type { Core } from './core.js';

/**
 * A refused purchase of a plain sale (no room, no draw: their shoppers are noted at the join or
 * the entry) noted as tried, from the product's view in memory: no round trip.
 */
export function plainSaleTried(core: Core, notes: FairnessNotes) {
  return (productId: string, userId: string, ip: () => string) => {
    const view = core.inventory.catalogue.known(productId);
    if (view && !view.room && !view.draw) notes.tried(productId, view.epoch, userId, ip());
  };
}

/** A follow of the queue page's decoy link, noted in the product's current sale (in memory). */
export function decoyFollowed(core: Core, notes: FairnessNotes) {
  return async (productId: string, userId: string, ip: string) => {
    const view = await core.inventory.catalogue.get(productId);
    if (view) notes.followedDecoy(productId, view.epoch, userId, ip);
  };
}
