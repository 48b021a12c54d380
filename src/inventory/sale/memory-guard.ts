/**
 * The refusals a purchase gets from this process's memory, before any promise or Redis command:
 * a product it knows is sold out, and a product outside its sale window beyond doubt by Redis's
 * clock. The deduct script asks the same in Redis and settles every race; this guard only spares
 * a crowd's refusals the trip (docs/design/sale.md#sold-out-from-memory).
 */
import type { ServerClock } from '../../redis/time.js';
import type { Catalogue, ProductView } from '../catalogue/catalogue.js';
import type { SaleRefusal } from '../errors.js';
import { pausedRefusal, soldOutRefusal, windowRefusal } from './refusals.js';

/**
 * A purchase this close to the sale's start or end (ms, by Redis's clock) is left to the deduct,
 * which reads the server's TIME: the window is refused from memory only beyond doubt.
 */
export const WINDOW_MARGIN_MS = 1_000;

const hasWindow = (view: ProductView) => view.startsAt > 0 || view.endsAt > 0;

export class MemoryGuard {
  private readonly clock: ServerClock;

  constructor(
    private readonly opts: {
      /** Redis's clock as seen from here, for the window (margin: WINDOW_MARGIN_MS) */
      clock: ServerClock;
      catalogue: Catalogue;
      /** counts each refusal as the sale counts its own */
      metrics?: { result(result: string, strategy: string): void } | undefined;
    },
  ) {
    this.clock = opts.clock;
  }

  /**
   * The refusal a purchase of `productId` gets without asking Redis, when this process already
   * knows it (sold out, or outside the sale window beyond doubt); undefined when only a purchase
   * can tell. Synchronous: a flash sale's after-sellout flood is answered without a promise or a
   * Redis command.
   */
  refusal(productId: string): SaleRefusal | undefined {
    const view = this.opts.catalogue.known(productId);
    const code = view && this.decide(view);
    if (!code) return undefined;
    this.opts.metrics?.result(code, view.strategy);
    if (code === 'sale-paused') return pausedRefusal(view);
    return code === 'sold-out' ? soldOutRefusal(view) : windowRefusal(view, code);
  }

  /** Whether {@link refusal} would refuse (nothing counted: nothing is answered from it). */
  knows(productId: string): boolean {
    const view = this.opts.catalogue.known(productId);
    return view !== undefined && this.decide(view) !== undefined;
  }

  private decide(
    view: ProductView,
  ): 'sold-out' | 'ended' | 'not-started' | 'sale-paused' | undefined {
    if (view.soldOut) return 'sold-out';
    // outside the window by Redis's clock beyond doubt: what every deduct would answer
    if (view.endsAt > 0 && this.clock.surelyAfter(view.endsAt)) return 'ended';
    if (view.startsAt > 0 && this.clock.surelyBefore(view.startsAt)) return 'not-started';
    // paused by an operator: every segment's window says so too (drop/controls.ts)
    if (view.paused) return 'sale-paused';
    return undefined;
  }

  /**
   * What {@link refusal} needs of a product this process never saw: its view and, for a product
   * with a window, a first sample of Redis's clock. Undefined: nothing to wait for.
   * @throws (rejects) when the view cannot be loaded (a store outage): the purchase could not
   *   have been answered either, and asking again in the sale would only double the wait
   */
  learn(productId: string): Promise<void> | undefined {
    const known = this.opts.catalogue.known(productId);
    if (known && !(this.clock.unsampled && hasWindow(known))) return undefined;
    return Promise.resolve(this.opts.catalogue.get(productId)).then((view) =>
      view && hasWindow(view) && this.clock.unsampled ? this.clock.sync() : undefined,
    );
  }
}
