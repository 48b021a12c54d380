/** How a product's stock and shoppers are spread over its segments. */

/** Stable 32-bit FNV-1a hash of a string: the same user maps to the same segment in every process. */
export function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The segment holding a shopper's purchase marker. */
export function homeSegment(userId: string, segments: number): number {
  return segments === 1 ? 0 : fnv1a(userId) % segments;
}

/** `total / segments` each, the remainder one unit apiece on the first segments. */
export function splitStock(total: number, segments: number): number[] {
  const base = Math.floor(total / segments);
  const rest = total % segments;
  return Array.from({ length: segments }, (_, i) => base + (i < rest ? 1 : 0));
}

/** The segments other than `home` not known to be empty, in random order (spreads spill load). */
export function spillOrder(segments: number, home: number, empty: ReadonlySet<number>): number[] {
  const out: number[] = [];
  for (let i = 0; i < segments; i++) if (i !== home && !empty.has(i)) out.push(i);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}
