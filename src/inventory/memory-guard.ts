/**
 * The refusals a purchase gets from this process's memory, before any promise or Redis command:
 * a product it knows is sold out, and a product outside its sale window beyond doubt by Redis's
 * clock. The deduct script asks the same in Redis and settles every race; this guard only spares
 * a crowd's refusals the trip (docs/design/sale.md#sold-out-from-memory).
 */
import type { ServerClock } from '../redis/time.js';
import type { Catalog, ProductView } from './catalog.js';
import type { SaleError } from './errors.js';
import { soldOutRefusal, windowRefusal } from './refusals.js';

/**
 * A purchase this close to the sale's start or end (ms, by Redis's clock) is left to the deduct,
 * which reads the server's TIME: the window is refused from memory only beyond doubt.
 */
export const WINDOW_MARGIN_MS = 1_000;

const hasWindow = (view: ProductView) => view.startsAt > 0 || view.endsAt > 0;
const noop = () => {};

export class MemoryGuard {
  private readonly clock: ServerClock;

  constructor(
    private readonly opts: {
      /** Redis's clock as seen from here, for the window (margin: WINDOW_MARGIN_MS) */
      clock: ServerClock;
      catalog: Catalog;
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
  refusal(productId: string): SaleError | undefined {
    const view = this.opts.catalog.known(productId);
    if (!view) return undefined;
    if (view.soldOut) {
      this.opts.metrics?.result('sold-out', view.strategy);
      return soldOutRefusal(view);
    }
    // outside the window by Redis's clock beyond doubt: what every deduct would answer
    const outside =
      view.endsAt > 0 && this.clock.surelyAfter(view.endsAt)
        ? 'ended'
        : view.startsAt > 0 && this.clock.surelyBefore(view.startsAt)
          ? 'not-started'
          : undefined;
    if (!outside) return undefined;
    this.opts.metrics?.result(outside, view.strategy);
    return windowRefusal(view, outside);
  }

  /**
   * What {@link refusal} needs of a product this process never saw: its view and, for a product
   * with a window, a first sample of Redis's clock. Undefined: nothing to wait for. A failed load
   * is left to the purchase, which meets it again and answers it.
   */
  learn(productId: string): Promise<void> | undefined {
    const known = this.opts.catalog.known(productId);
    if (known && !(this.clock.unsampled && hasWindow(known))) return undefined;
    let got: ReturnType<Catalog['get']>;
    try {
      got = this.opts.catalog.get(productId);
    } catch {
      return undefined;
    }
    return Promise.resolve(got)
      .then((view) =>
        view && hasWindow(view) && this.clock.unsampled ? this.clock.sync() : undefined,
      )
      .then(noop, noop);
  }
}
