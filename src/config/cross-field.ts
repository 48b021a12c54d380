/** The rules of the environment that span several variables (env.ts holds each one's). */
/**
 * Rules across variables. They read the raw strings so they are reported together with the
 * per-variable problems (zod skips refinements of an object that already failed).
 */
export function crossFieldProblems(input: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  const mode = input.AUTH_MODE ?? 'jwt';
  if (mode === 'jwt' && !input.JWT_SECRET && !input.JWT_JWKS_URL) {
    problems.push(
      "JWT_SECRET: AUTH_MODE=jwt needs JWT_SECRET (HS256) or JWT_JWKS_URL (the provider's keys), or both (or set AUTH_MODE=dev for demos)",
    );
  }
  if (input.JWT_JWKS_URL && (!input.JWT_ISSUER || !input.JWT_AUDIENCE)) {
    problems.push(
      "JWT_JWKS_URL: needs JWT_ISSUER and JWT_AUDIENCE (a provider signs tokens for many applications: only this one's may buy)",
    );
  }
  if (input.NODE_ENV === 'production' && mode === 'dev') {
    problems.push(
      'AUTH_MODE: dev trusts the X-User-Id header and is refused when NODE_ENV=production',
    );
  }
  if ((input.CHALLENGE ?? 'off') !== 'off' && !input.CHALLENGE_SECRET) {
    problems.push(
      `CHALLENGE_SECRET: CHALLENGE=${input.CHALLENGE} needs it (the HMAC key of proofs of work, or the provider's secret key)`,
    );
  }
  const drain = Number(input.DRAIN_MS ?? 0);
  const shutdown = Number(input.SHUTDOWN_TIMEOUT_MS ?? 10_000);
  if (drain > 0 && drain >= shutdown) {
    problems.push(
      `DRAIN_MS: ${drain} must be shorter than SHUTDOWN_TIMEOUT_MS (${shutdown}), which forces the exit`,
    );
  }
  if (input.REDIS_URL && input.REDIS_CLUSTER_NODES) {
    problems.push('REDIS_CLUSTER_NODES: set REDIS_URL (one Redis) or this (a cluster), not both');
  }
  const shards = Number(input.LOCAL_REDIS_SHARDS ?? 1);
  if (shards === 2) {
    problems.push(
      'LOCAL_REDIS_SHARDS: a Redis Cluster needs at least 3 masters (1, or 3 and more)',
    );
  }
  if (Number(input.LOCAL_REDIS_REPLICAS ?? 0) > 0 && shards < 3) {
    problems.push(
      'LOCAL_REDIS_REPLICAS: replicas belong to a local cluster (LOCAL_REDIS_SHARDS >= 3)',
    );
  }
  const replicas = Number(input.LOCAL_REDIS_REPLICAS ?? 0);
  const base = Number(input.LOCAL_REDIS_PORT ?? 6380);
  if (shards >= 3 && Number.isInteger(base) && Number.isInteger(replicas)) {
    // nodes from the base port, then their cluster bus ports
    const last = base + clusterPortSpan(shards, replicas) - 1;
    if (last > 65_535) {
      problems.push(
        `LOCAL_REDIS_PORT: a cluster of ${shards} masters x ${1 + replicas} nodes uses ports ${base}-${last}, past 65535`,
      );
    }
    const pgPort = Number(input.LOCAL_PG_PORT ?? 5433);
    if (!input.DATABASE_URL && pgPort >= base && pgPort <= last) {
      problems.push(
        `LOCAL_PG_PORT: ${pgPort} is inside the local Redis Cluster's ports ${base}-${last}`,
      );
    }
  }
  if (shards > 1 && (input.REDIS_URL || input.REDIS_CLUSTER_NODES)) {
    problems.push(
      'LOCAL_REDIS_SHARDS: shapes the Redis the launcher starts; with REDIS_URL or REDIS_CLUSTER_NODES it starts none',
    );
  }
  if (!input.VAPID_PUBLIC_KEY !== !input.VAPID_PRIVATE_KEY) {
    problems.push(
      'VAPID_PRIVATE_KEY: Web Push needs VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY, both or neither',
    );
  }
  if (input.VAPID_PUBLIC_KEY && !input.VAPID_SUBJECT) {
    problems.push(
      'VAPID_SUBJECT: Web Push needs a contact for the push services (mailto: or https:)',
    );
  }
  return problems;
}

/** Ports a local cluster uses from LOCAL_REDIS_PORT: its nodes, then their cluster bus ports. */
export function clusterPortSpan(shards: number, replicas: number): number {
  return 2 * shards * (1 + replicas);
}
