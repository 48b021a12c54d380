/**
 * A small DNS server on a UDP port of 127.0.0.1 (RFC 1035 messages, A and AAAA only), for the
 * receivers' resolver (`Resolver.setServers(['127.0.0.1:<port>'])`): each name answers from its
 * record, at once, or, while it is held, not until the test releases it. A name it does not know
 * is NXDOMAIN; a known name without records of the asked type answers none (NODATA).
 */
import dgram from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';

export interface DnsRecord {
  addresses: string[];
  /** seconds (default 60) */
  ttl?: number;
}

interface Query {
  name: string;
  type: 'A' | 'AAAA' | 'other';
  respond(): void;
}

const TYPES: Record<number, Query['type']> = { 1: 'A', 28: 'AAAA' };

/** The question's name (labels), its type and where the question ends. */
function question(msg: Buffer): { name: string; qtype: number; end: number } {
  const labels: string[] = [];
  let i = 12;
  while (msg[i] !== 0) {
    const len = msg[i]!;
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('ascii'));
    i += len + 1;
  }
  return { name: labels.join('.').toLowerCase(), qtype: msg.readUInt16BE(i + 1), end: i + 5 };
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, ''];
  const groups = (part: string) => (part ? part.split(':') : []);
  const front = groups(head!);
  const back = groups(tail!);
  const all = [...front, ...Array(8 - front.length - back.length).fill('0'), ...back];
  const out = Buffer.alloc(16);
  all.forEach((g, k) => out.writeUInt16BE(parseInt(g as string, 16), k * 2));
  return out;
}

function answer(msg: Buffer, record: DnsRecord | undefined, qtype: number, end: number): Buffer {
  const header = Buffer.from(msg.subarray(0, 12));
  const rcode = record ? 0 : 3; // NXDOMAIN for a name it does not know
  header.writeUInt16BE(0x8180 | rcode, 2); // response, recursion desired + available
  header.writeUInt16BE(1, 4); // one question
  const rdatas = (record?.addresses ?? []).flatMap((a) =>
    qtype === 1 && isIPv4(a)
      ? [Buffer.from(a.split('.').map(Number))]
      : qtype === 28 && isIPv6(a)
        ? [ipv6Bytes(a)]
        : [],
  );
  header.writeUInt16BE(rdatas.length, 6);
  header.writeUInt32BE(0, 8); // no authority, no additional records
  const answers = rdatas.map((rdata) => {
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc00c, 0); // the question's name
    rr.writeUInt16BE(qtype, 2);
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(record?.ttl ?? 60, 6);
    rr.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([rr, rdata]);
  });
  return Buffer.concat([header, msg.subarray(12, end), ...answers]);
}

export class DnsResponder {
  readonly records = new Map<string, DnsRecord>();
  /** every query received, in order */
  readonly queries: Query[] = [];
  private readonly held = new Set<string>();
  private readonly waiting: Query[] = [];
  private socket: dgram.Socket | undefined;
  port = 0;

  async start(port = 0): Promise<this> {
    const socket = dgram.createSocket('udp4');
    this.socket = socket;
    socket.on('message', (msg, peer) => {
      if (msg.length < 17) return;
      const { name, qtype, end } = question(msg);
      const query: Query = {
        name,
        type: TYPES[qtype] ?? 'other',
        respond: () =>
          socket.send(answer(msg, this.records.get(name), qtype, end), peer.port, peer.address),
      };
      this.queries.push(query);
      if (this.held.has(name)) this.waiting.push(query);
      else query.respond();
    });
    await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve));
    this.port = socket.address().port;
    return this;
  }

  /** `ip:port` for Resolver.setServers */
  get server(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Queries of `name` received (of one type, if given). */
  asked(name: string, type?: 'A' | 'AAAA'): number {
    return this.queries.filter((q) => q.name === name && (!type || q.type === type)).length;
  }

  /** Queries of `name` held unanswered. */
  unanswered(name: string): number {
    return this.waiting.filter((q) => q.name === name).length;
  }

  /** Queries of `name` are answered only once it is released. */
  hold(name: string): void {
    this.held.add(name);
  }

  release(name: string): void {
    this.held.delete(name);
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      if (this.waiting[i]!.name !== name) continue;
      this.waiting[i]!.respond();
      this.waiting.splice(i, 1);
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.socket ? this.socket.close(() => resolve()) : resolve()));
  }
}
