import type { AddressInfo } from 'node:net';
import type { Config } from '../../src/config/index.js';
import { createLogger } from '../../src/log.js';
import { serveApi } from '../../src/main.js';
import { startOrderQueue, startOrderSubmitter } from '../../src/orders/index.js';
import { createRuntime, type Runtime } from '../../src/runtime.js';

export interface RunningApp {
  url: string;
  rt: Runtime;
  close(): Promise<void>;
}

/** The real API on an ephemeral port, with the same wiring `seckill serve` uses (no worker). */
export async function startApp(config: Config): Promise<RunningApp> {
  const rt = createRuntime({ ...config, http: { ...config.http, port: 0 } }, createLogger(config));
  const queue = startOrderQueue(rt);
  const server = await serveApi(rt, {
    onPurchase: startOrderSubmitter(rt, queue),
    queues: [queue],
  });
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, rt, close: () => rt.lifecycle.close() };
}
