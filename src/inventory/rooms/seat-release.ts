/**
 * The seat a purchase frees: a shopper of a product with a waiting room who bought (or reached
 * their limit, so an earlier try bought) is done with their admission, and its seat goes to the
 * next in line. Nothing waits on it: the purchase is answered whether or not the release lands.
 */
import type { Logger } from '../../log.js';
import type { Catalogue } from '../catalogue/catalogue.js';
import type { RoomStore } from './store.js';

/** Tries of one release, a second apart. */
const RELEASE_TRIES = 5;
const RELEASE_RETRY_MS = 1_000;

/** The release of a bought shopper's seat, for the purchase to call once it knows they bought. */
export function seatRelease(deps: {
  catalogue: Pick<Catalogue, 'known'>;
  store: Pick<RoomStore, 'done'>;
  logger?: Logger | undefined;
}): (productId: string, userId: string) => void {
  return (productId, userId) => {
    const view = deps.catalogue.known(productId);
    if (!view?.room) return;
    // Retried: a seat left taken stops admission until the admission runs out (up to
    // admittedForSeconds: a paused master that times the release out would hold the line that
    // long)
    const free = (tries: number): void => {
      deps.store.done(productId, view.epoch, userId).catch((err: unknown) => {
        if (tries > 1) return void setTimeout(() => free(tries - 1), RELEASE_RETRY_MS).unref();
        deps.logger?.warn({ err, product: productId }, 'freeing a room seat failed');
      });
    };
    free(RELEASE_TRIES);
  };
}
