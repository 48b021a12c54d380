/** Tiny dependency-free SVG charts for the benchmark report. */

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

export interface Bar {
  label: string;
  value: number;
}

/** Horizontal bars, one per row, value printed at the end. */
export function barChart(title: string, unit: string, bars: Bar[]): string {
  const rowH = 28;
  const labelW = 190;
  const barW = 420;
  const top = 40;
  const height = top + bars.length * rowH + 20;
  const max = Math.max(1, ...bars.map((b) => b.value));
  const rows = bars.map((b, i) => {
    const y = top + i * rowH;
    const w = Math.max(1, (b.value / max) * barW);
    return [
      `<text x="${labelW - 8}" y="${y + 18}" text-anchor="end">${esc(b.label)}</text>`,
      `<rect x="${labelW}" y="${y + 4}" width="${w.toFixed(1)}" height="${rowH - 8}" fill="#4e79a7"/>`,
      `<text x="${(labelW + w + 6).toFixed(1)}" y="${y + 18}">${Math.round(b.value).toLocaleString('en-US')} ${esc(unit)}</text>`,
    ].join('');
  });
  return svg(labelW + barW + 140, height, title, rows.join('\n'));
}

/** Grouped bars: for each row, one bar per series (e.g. p50 / p95 / p99). */
export function groupedBarChart(
  title: string,
  unit: string,
  series: string[],
  rows: Array<{ label: string; values: number[] }>,
): string {
  const colors = ['#59a14f', '#f28e2b', '#e15759', '#76b7b2'];
  const barH = 10;
  const groupH = series.length * barH + 12;
  const labelW = 190;
  const barW = 420;
  const top = 56;
  const max = Math.max(1, ...rows.flatMap((r) => r.values));
  const legend = series
    .map(
      (s, i) =>
        `<rect x="${labelW + i * 90}" y="30" width="10" height="10" fill="${colors[i % colors.length]}"/>` +
        `<text x="${labelW + i * 90 + 14}" y="39">${esc(s)}</text>`,
    )
    .join('');
  const body = rows.map((r, gi) => {
    const y0 = top + gi * groupH;
    const bars = r.values.map((v, si) => {
      const w = Math.max(1, (v / max) * barW);
      const y = y0 + si * barH;
      return (
        `<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH - 2}" fill="${colors[si % colors.length]}"/>` +
        `<text x="${(labelW + w + 4).toFixed(1)}" y="${y + 8}" font-size="9">${v.toFixed(1)} ${esc(unit)}</text>`
      );
    });
    return `<text x="${labelW - 8}" y="${y0 + (series.length * barH) / 2 + 4}" text-anchor="end">${esc(r.label)}</text>${bars.join('')}`;
  });
  return svg(labelW + barW + 120, top + rows.length * groupH + 10, title, legend + body.join('\n'));
}

function svg(width: number, height: number, title: string, inner: string): string {
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `font-family="sans-serif" font-size="12">\n` +
    `<rect width="100%" height="100%" fill="white"/>\n` +
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(title)}</text>\n${inner}\n</svg>\n`
  );
}
