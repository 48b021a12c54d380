/**
 * Renders a kustomization the way `kustomize build` does, for the fields deploy/ uses
 * (resources, images, replacements with delimiter options and `*` over a list's items in a target's
 * field path); any other field is an error, so a
 * kustomization this cannot render fails loudly instead of rendering wrong. When a kustomize v5
 * (`kubectl kustomize`) is at hand, the deploy test compares the two renders.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: any;
  [k: string]: unknown;
};

interface Select {
  kind?: string;
  name?: string;
}
interface Options {
  delimiter?: string;
  index?: number;
}
interface Kustomization {
  resources?: string[];
  images?: Array<{ name: string; newName?: string; newTag?: string; digest?: string }>;
  replacements?: Array<{
    source: Select & { fieldPath: string; options?: Options };
    targets: Array<{ select: Select; fieldPaths: string[]; options?: Options }>;
  }>;
}

const SUPPORTED = new Set(['apiVersion', 'kind', 'resources', 'images', 'replacements']);

/** `a.b.[name=x].c` / `a.0.b`: the path's segments. */
function segments(path: string): string[] {
  return path.split(/\.(?![^[]*\])/);
}

function step(node: any, seg: string): any {
  const m = /^\[(\w+)=(.+)\]$/.exec(seg);
  if (m) return (node as any[]).find((e) => String(e?.[m[1]!]) === m[2]);
  return node?.[/^\d+$/.test(seg) ? Number(seg) : seg];
}

function getPath(obj: unknown, path: string): unknown {
  return segments(path).reduce<any>((n, s) => step(n, s), obj);
}

function setPath(obj: unknown, path: string, value: unknown): void {
  const segs = segments(path);
  const parent = segs.slice(0, -1).reduce<any>((n, s) => step(n, s), obj);
  if (parent === undefined) throw new Error(`no ${path}`);
  parent[segs.at(-1)!] = value;
}

/** A field path with `*` (every item of a list) as the concrete paths it names in `obj`. */
function expand(obj: unknown, path: string): string[] {
  const segs = segments(path);
  const star = segs.indexOf('*');
  if (star === -1) return [path];
  const head = segs.slice(0, star);
  const list = head.reduce<any>((n, s) => step(n, s), obj);
  if (!Array.isArray(list)) return [];
  return list.flatMap((_, i) =>
    expand(obj, [...head, String(i), ...segs.slice(star + 1)].join('.')),
  );
}

const selects = (o: K8sObject, s: Select) =>
  (!s.kind || o.kind === s.kind) && (!s.name || o.metadata.name === s.name);

/** Every container list of a workload's pod template (and a bare pod's). */
export function podSpecOf(o: K8sObject): any | undefined {
  if (o.kind === 'Pod') return o.spec;
  if (o.kind === 'CronJob') return o.spec?.jobTemplate?.spec?.template?.spec;
  return o.spec?.template?.spec;
}

function containersOf(o: K8sObject): Array<{ image?: string }> {
  const pod = podSpecOf(o);
  return pod ? [...(pod.containers ?? []), ...(pod.initContainers ?? [])] : [];
}

/** `registry:5000/a/b:tag@sha` -> `registry:5000/a/b` */
export function imageName(image: string): string {
  const noDigest = image.split('@')[0]!;
  const lastSlash = noDigest.lastIndexOf('/');
  const colon = noDigest.indexOf(':', lastSlash + 1);
  return colon === -1 ? noDigest : noDigest.slice(0, colon);
}

export function renderKustomization(dir: string): K8sObject[] {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
  const unknown = Object.keys(k).filter((f) => !SUPPORTED.has(f));
  if (unknown.length) throw new Error(`${dir}: the test's renderer does not know ${unknown}`);
  const objects: K8sObject[] = (k.resources ?? []).flatMap((r) => {
    const path = join(dir, r);
    if (statSync(path).isDirectory()) return renderKustomization(path);
    return parseAllDocuments(readFileSync(path, 'utf8'))
      .map((d) => d.toJS() as K8sObject | null)
      .filter((o): o is K8sObject => o !== null);
  });
  for (const img of k.images ?? []) {
    for (const c of objects.flatMap(containersOf)) {
      if (!c.image || imageName(c.image) !== img.name) continue;
      const name = img.newName ?? img.name;
      const old = c.image.slice(imageName(c.image).length);
      c.image = img.digest
        ? `${name}@${img.digest}`
        : img.newTag
          ? `${name}:${img.newTag}`
          : `${name}${old}`;
    }
  }
  for (const r of k.replacements ?? []) {
    const source = objects.filter((o) => selects(o, r.source));
    if (source.length !== 1) throw new Error(`replacement source matches ${source.length} objects`);
    let value = String(getPath(source[0], r.source.fieldPath));
    const so = r.source.options;
    if (so?.delimiter !== undefined) value = value.split(so.delimiter)[so.index ?? 0] ?? '';
    for (const t of r.targets) {
      for (const o of objects.filter((x) => selects(x, t.select))) {
        for (const fp of t.fieldPaths.flatMap((p) => expand(o, p))) {
          const to = t.options;
          if (to?.delimiter === undefined) {
            setPath(o, fp, value);
            continue;
          }
          // as kustomize: an index past the end appends, before the start prepends
          const parts = String(getPath(o, fp) ?? '').split(to.delimiter);
          const i = to.index ?? 0;
          if (i >= parts.length) parts.push(value);
          else if (i < 0) parts.unshift(value);
          else parts[i] = value;
          setPath(o, fp, parts.join(to.delimiter));
        }
      }
    }
  }
  return objects;
}

/**
 * `kubectl kustomize <dir>` (or `kustomize build`) when a kustomize v5 is on PATH (the one in
 * Debian's kubernetes-client is v2, which has no replacements); undefined otherwise.
 */
export function kustomizeBinary(dir: string): { tool: string; objects: K8sObject[] } | undefined {
  for (const [cmd, args] of [
    ['kustomize', ['build', dir]],
    ['kubectl', ['kustomize', dir]],
  ] as const) {
    const version = spawnSync(cmd, cmd === 'kubectl' ? ['version', '--client'] : ['version'], {
      encoding: 'utf8',
    });
    if (version.status !== 0 || !/v5\.\d+/.test(version.stdout)) continue;
    const r = spawnSync(cmd, args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}`);
    return {
      tool: `${cmd} (${/v5\.[\d.]+/.exec(version.stdout)![0]})`,
      objects: parseAllDocuments(r.stdout).map((d) => d.toJS() as K8sObject),
    };
  }
  return undefined;
}
