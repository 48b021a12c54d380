/**
 * The operators' audit log: every change an admin makes (seeds, the drop's controls, the webhook
 * endpoints, a refetch of the identity provider's keys) is recorded with who, when and what, in
 * PostgreSQL (db/audit-repository.ts). The row is written before the change runs and completed
 * after it, so no change runs unrecorded: when the log cannot be written the change is not made
 * (the store's outage answers 503), and a process that dies mid-change leaves its row `started`.
 */
import { messageOf, QuietError } from '../../errors.js';

export type AuditOutcome = 'started' | 'done' | 'refused' | 'failed';

/** Who made a change. The operator's name is declared (X-Operator, --operator), not proven. */
export interface AuditActor {
  via: 'token' | 'session' | 'cli';
  /** a dashboard session's id prefix, or the CLI's OS user */
  session?: string | undefined;
  operator?: string | undefined;
  /** the client address of an HTTP request */
  address?: string | undefined;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: AuditActor;
  action: string;
  productId: string | null;
  epoch: number | null;
  request: unknown;
  outcome: AuditOutcome;
  result: unknown;
  finishedAt: string | null;
}

/** Where the log is kept (db/audit-repository.ts). */
export interface AuditStore {
  begin(entry: {
    actor: AuditActor;
    action: string;
    productId: string | undefined;
    request: unknown;
  }): Promise<string>;
  finish(id: string, outcome: AuditOutcome, result: unknown, epoch?: number): Promise<void>;
  /** newest first; `beforeId`: older than that entry */
  list(query: {
    productId?: string | undefined;
    limit: number;
    beforeId?: string | undefined;
  }): Promise<AuditEntry[]>;
}

/** What a change asked, as the log keeps it. */
export interface AuditedChange<T = unknown> {
  actor: AuditActor;
  action: string;
  productId?: string | undefined;
  request?: unknown;
  /** what of the result the log keeps (default: all of it); a secret in it must be left out */
  kept?: (result: T) => unknown;
}

/** The code of a refusal (a 4xx ProblemError, a SaleError); undefined for a failure. */
function refusalCode(err: unknown): string | undefined {
  if (!(err instanceof QuietError) || !('code' in err) || typeof err.code !== 'string') {
    return undefined;
  }
  const status = (err as { status?: unknown }).status;
  return typeof status === 'number' && status >= 500 ? undefined : err.code;
}

/**
 * Runs `change` recorded: the row first (its failure stops the change), the outcome after. A
 * change that throws a refusal (an error with a code: a 4xx, a SaleError) is `refused`, anything
 * else `failed`; either way the error goes on to the caller. The result's `epoch`, when it has
 * one, is the sale the change acted on.
 */
export async function audited<T>(
  store: AuditStore,
  what: AuditedChange<T>,
  change: () => Promise<T>,
  onFinishFailed: (err: unknown) => void = () => {},
): Promise<T> {
  const id = await store.begin({
    actor: what.actor,
    action: what.action,
    productId: what.productId,
    request: what.request ?? {},
  });
  const finish = (outcome: AuditOutcome, result: unknown, epoch?: number) =>
    store.finish(id, outcome, result, epoch).catch(onFinishFailed);
  let result: T;
  try {
    result = await change();
  } catch (err) {
    const code = refusalCode(err);
    await finish(code ? 'refused' : 'failed', { ...(code && { code }), message: messageOf(err) });
    throw err;
  }
  const epoch = (result as { epoch?: unknown } | undefined)?.epoch;
  const kept = what.kept ? what.kept(result) : result;
  await finish('done', kept ?? {}, typeof epoch === 'number' ? epoch : undefined);
  return result;
}
