import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Queue } from 'bullmq';
import type { Config } from '../../src/config/index.js';
import { createCore, type Core } from '../../src/composition/core.js';
import {
  apiServices,
  serveApi,
  startOrderQueue,
  startOrderWorker,
} from '../../src/composition/roles.js';
import { createLogger } from '../../src/log.js';
import { recordAnswers } from './answers.js';

export interface RunningApp {
  url: string;
  rt: Core;
  queue: Queue;
  /** the HTTP server (its 'request' listener is the Express app) */
  server: Server;
  /** the services it serves (the waiting rooms' admitter among them) */
  services: ReturnType<typeof apiServices>;
  close(): Promise<void>;
}

/**
 * The real API on an ephemeral port, with the same wiring `seckill serve` uses; with `worker`,
 * the order worker too (as `seckill up` runs both).
 */
export async function startApp(config: Config, o: { worker?: boolean } = {}): Promise<RunningApp> {
  const rt = createCore({ ...config, http: { ...config.http, port: 0 } }, createLogger(config));
  const queue = startOrderQueue(rt);
  if (o.worker) await startOrderWorker(rt, queue);
  const services = apiServices(rt, queue);
  const server = await serveApi(rt, services, [queue]);
  recordAnswers(server);
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    rt,
    queue,
    server,
    services,
    close: () => rt.lifecycle.close(),
  };
}
