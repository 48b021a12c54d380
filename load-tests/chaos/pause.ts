/** SIGSTOP a process and its children (PostgreSQL's backends are the postmaster's children). */
import { readdirSync, readFileSync } from 'node:fs';

function children(pid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      // field 4 of /proc/<pid>/stat is the parent; the name (field 2) may hold spaces
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Signals `pid`, a process that is already gone included. */
export function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** Pauses the tree; the returned function resumes exactly the processes it paused. */
export function pauseTree(root: number): () => void {
  const paused = [root, ...children(root)];
  for (const pid of paused) signal(pid, 'SIGSTOP');
  return () => {
    for (const pid of paused) signal(pid, 'SIGCONT');
  };
}
