/**
 * Counts the commands one connection sends, by name, pipelines included (every command of an
 * ioredis connection or cluster goes through its sendCommand): how tests and benchmarks measure
 * what a code path costs in Redis without MONITOR or server-wide INFO (shared servers). Commands
 * a background loop sends (run by background.ts's inBackground: the rooms' admitter) are not a
 * request's cost and are not counted, unless asked for (`background`: what a room costs).
 */
import type { Cluster, Redis } from 'ioredis';
import { backgroundLoop } from './background.js';

export interface CommandCount {
  /** commands sent since the start (or the last reset), by lower-case name */
  readonly byName: Map<string, number>;
  /** EVALSHA calls among them, by script SHA1 (scripts.ts scriptNameOf names one) */
  readonly bySha: Map<string, number>;
  total(): number;
  reset(): void;
  /** puts the connection's own sendCommand back */
  stop(): void;
}

export interface CountOptions {
  /**
   * Count the commands of this background loop too (`'room admitter'`: what a waiting room
   * costs, whoever sends it), or of every loop (true).
   */
  background?: boolean | string;
  /** Count only commands with an argument that contains this (a product id: its keys, channel). */
  naming?: string;
}

export function countCommands(conn: Redis | Cluster, opts: CountOptions = {}): CommandCount {
  const byName = new Map<string, number>();
  const bySha = new Map<string, number>();
  const target = conn as unknown as {
    sendCommand: (cmd: { name: string; args: unknown[] }, ...a: unknown[]) => unknown;
  };
  const original = target.sendCommand;
  const { naming } = opts;
  const counted = (loop: string | undefined) =>
    loop === undefined || opts.background === true || opts.background === loop;
  target.sendCommand = function (cmd, ...rest) {
    if (!counted(backgroundLoop())) return original.call(this, cmd, ...rest);
    if (naming !== undefined && !cmd.args.some((a) => String(a).includes(naming))) {
      return original.call(this, cmd, ...rest);
    }
    const name = cmd.name.toLowerCase();
    byName.set(name, (byName.get(name) ?? 0) + 1);
    if (name === 'evalsha') {
      const sha = String(cmd.args[0]);
      bySha.set(sha, (bySha.get(sha) ?? 0) + 1);
    }
    return original.call(this, cmd, ...rest);
  };
  return {
    byName,
    bySha,
    total: () => [...byName.values()].reduce((a, b) => a + b, 0),
    reset: () => {
      byName.clear();
      bySha.clear();
    },
    stop: () => {
      target.sendCommand = original;
    },
  };
}
