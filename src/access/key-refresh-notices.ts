/**
 * "Fetch the identity provider's keys again now", told to every API process (several share a
 * port, more run elsewhere) over Redis pub/sub: the admin's answer to a leaked key the provider
 * withdrew, which each process would otherwise trust until its set expires (10 min). Pub/sub is
 * at most once: a process whose subscriber was away meanwhile refetches when it is back (a notice
 * may have been missed), and one that could not subscribe at start keeps trying.
 */

/** What the notices need of the process's subscriber (redis/pubsub.ts). */
export interface NoticeSubscriber {
  subscribe(channel: string, handler: (message: string) => void): Promise<() => void>;
  onReconnect(listener: () => void): () => void;
}

export interface KeyRefreshNoticesOptions {
  channel: string;
  subscriber: NoticeSubscriber;
  /** SPUBLISH: resolves with how many subscribers heard it */
  publish(channel: string, message: string): Promise<number>;
  /** a subscription that failed is tried again this long after (default 5 s) */
  retryMs?: number;
  onError?: (err: unknown) => void;
}

export class KeyRefreshNotices {
  constructor(private readonly opts: KeyRefreshNoticesOptions) {}

  /** Tells every listening process but `from` to refetch; resolves with how many heard it. */
  announce(from: string): Promise<number> {
    return this.opts.publish(this.opts.channel, from);
  }

  /**
   * Calls `refetch` on every notice not sent by `self`, and after the subscriber reconnects.
   * @returns what stops listening
   */
  listen(self: string, refetch: () => void): () => void {
    let stopped = false;
    let unsubscribe = () => {};
    let retry: NodeJS.Timeout | undefined;
    const stopReconnect = this.opts.subscriber.onReconnect(() => refetch());
    const subscribe = (late: boolean) => {
      this.opts.subscriber
        .subscribe(this.opts.channel, (from) => {
          if (from !== self) refetch();
        })
        .then(
          (stop) => {
            if (stopped) return stop();
            unsubscribe = stop;
            // a notice sent before this late subscription was missed
            if (late) refetch();
          },
          (err: unknown) => {
            this.opts.onError?.(err);
            if (stopped) return;
            retry = setTimeout(() => subscribe(true), this.opts.retryMs ?? 5_000);
            retry.unref();
          },
        );
    };
    subscribe(false);
    return () => {
      stopped = true;
      clearTimeout(retry);
      stopReconnect();
      unsubscribe();
    };
  }
}
