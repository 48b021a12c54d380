/** proxy-addr (Express's own dependency for req.ip): the client address under a trust function. */
declare module 'proxy-addr' {
  import type { IncomingMessage } from 'node:http';
  function proxyaddr(req: IncomingMessage, trust: (addr: string, i: number) => boolean): string;
  export = proxyaddr;
}
