/**
 * The Pod Security Standards' "restricted" profile (Kubernetes docs, "Pod Security Standards":
 * its baseline rules and the restricted ones), as checks on a pod spec, plus what this project
 * asks on top (no service account token, a read-only root, resources). Returns the violations.
 */

const RESTRICTED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);

export function restrictedViolations(pod: any): string[] {
  const v: string[] = [];
  const psc = pod.securityContext ?? {};
  for (const host of ['hostNetwork', 'hostPID', 'hostIPC'] as const) {
    if (pod[host]) v.push(`${host} is set`);
  }
  for (const vol of pod.volumes ?? []) {
    const type = Object.keys(vol).find((k) => k !== 'name');
    if (!type || !RESTRICTED_VOLUMES.has(type)) v.push(`volume ${vol.name}: ${type} not allowed`);
  }
  if (psc.runAsUser === 0) v.push('pod runAsUser 0');
  if (psc.seccompProfile && !['RuntimeDefault', 'Localhost'].includes(psc.seccompProfile.type)) {
    v.push(`pod seccompProfile ${psc.seccompProfile.type}`);
  }
  if (pod.automountServiceAccountToken !== false) v.push('automountServiceAccountToken not false');
  const containers = [
    ...(pod.containers ?? []),
    ...(pod.initContainers ?? []),
    ...(pod.ephemeralContainers ?? []),
  ];
  if (containers.length === 0) v.push('no containers');
  for (const c of containers) {
    const sc = c.securityContext ?? {};
    const at = `container ${c.name}`;
    if (sc.privileged) v.push(`${at}: privileged`);
    if (sc.allowPrivilegeEscalation !== false) v.push(`${at}: allowPrivilegeEscalation not false`);
    const drop: string[] = sc.capabilities?.drop ?? [];
    if (!drop.includes('ALL')) v.push(`${at}: capabilities do not drop ALL`);
    const add: string[] = sc.capabilities?.add ?? [];
    if (add.some((a) => a !== 'NET_BIND_SERVICE')) v.push(`${at}: adds capabilities ${add}`);
    const nonRoot = sc.runAsNonRoot ?? psc.runAsNonRoot;
    if (nonRoot !== true) v.push(`${at}: runAsNonRoot not true`);
    if (sc.runAsUser === 0) v.push(`${at}: runAsUser 0`);
    const seccomp = sc.seccompProfile?.type ?? psc.seccompProfile?.type;
    if (!['RuntimeDefault', 'Localhost'].includes(seccomp)) v.push(`${at}: seccomp ${seccomp}`);
    if (sc.procMount && sc.procMount !== 'Default') v.push(`${at}: procMount ${sc.procMount}`);
    for (const p of c.ports ?? []) if (p.hostPort) v.push(`${at}: hostPort ${p.hostPort}`);
    // this project's own rules
    if (sc.readOnlyRootFilesystem !== true) v.push(`${at}: root file system writable`);
    const r = c.resources ?? {};
    if (!r.requests?.cpu || !r.requests?.memory || !r.limits?.memory) {
      v.push(`${at}: cpu/memory requests and a memory limit`);
    }
  }
  return v;
}
