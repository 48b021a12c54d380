import type { AddressInfo } from 'node:net';
import type { Config } from '../../src/config/index.js';
import { createCore, type Core } from '../../src/composition/core.js';
import { apiServices, serveApi, startOrderQueue } from '../../src/composition/roles.js';
import { createLogger } from '../../src/log.js';

export interface RunningApp {
  url: string;
  rt: Core;
  close(): Promise<void>;
}

/** The real API on an ephemeral port, with the same wiring `seckill serve` uses (no worker). */
export async function startApp(config: Config): Promise<RunningApp> {
  const rt = createCore({ ...config, http: { ...config.http, port: 0 } }, createLogger(config));
  const queue = startOrderQueue(rt);
  const server = await serveApi(rt, apiServices(rt, queue), [queue]);
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, rt, close: () => rt.lifecycle.close() };
}
