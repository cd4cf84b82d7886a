/**
 * What the machine looks like with no node: read from the machine itself (iptables-save,
 * the links, /proc's mounts and executables, the cgroup folders, the sysctls), so that a
 * test can compare before the node started with after it stopped.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { promisify } from 'node:util';
import { NODE_DIR } from '@operators/controlplane';

const exec = promisify(execFile);

export interface MachineTrace {
  /** iptables chains named like kube-proxy's, the kubelet's, CNI's or ours, per table. */
  readonly chains: readonly string[];
  readonly links: readonly string[];
  /** Mount points under the node's folder or the paths compiled into its programs. */
  readonly mounts: readonly string[];
  readonly kubepodsCgroups: readonly string[];
  readonly sysctls: Readonly<Record<string, string>>;
  /** Processes running a binary of the node (containerd, shims, kubelet, pause, ...). */
  readonly processes: readonly string[];
  readonly paths: readonly string[];
}

const SYSCTLS = ['vm/overcommit_memory', 'kernel/panic', 'kernel/panic_on_oops', 'net/ipv4/ip_forward'];
const PATHS = [NODE_DIR, '/var/lib/cni', '/var/lib/kubelet', '/var/log/containers', '/var/log/pods'];
const NODE_PROGRAMS =
  /\/(containerd|containerd-shim-runc-v2|kubelet|kube-proxy|kube-scheduler|coredns|pause|runc)( \(deleted\))?$/;

export async function machineTrace(): Promise<MachineTrace> {
  const chains: string[] = [];
  for (const table of ['filter', 'nat', 'mangle']) {
    const { stdout } = await exec('iptables-save', ['-t', table]);
    for (const l of stdout.split('\n')) {
      const m = /^:((KUBE|CNI|KOT)-\S+)/.exec(l);
      if (m) chains.push(`${table}/${m[1]}`);
    }
  }
  const { stdout: linkText } = await exec('ip', ['-o', 'link', 'show']);
  const links = linkText
    .split('\n')
    .map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1] ?? '')
    .filter((n) => /^(kot-|veth|cni)/.test(n));
  const mounts = (await readFile('/proc/self/mountinfo', 'utf8'))
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter(
      (p) => p.startsWith(NODE_DIR) || p.startsWith('/var/lib/kubelet') || p.startsWith('/run/containerd'),
    );
  const kubepodsCgroups = (await readdir('/sys/fs/cgroup').catch(() => [] as string[]))
    .map((c) => `/sys/fs/cgroup/${c}/kubepods`)
    .filter((d) => existsSync(d));
  const sysctls = Object.fromEntries(
    await Promise.all(
      SYSCTLS.map(async (s) => [s, (await readFile(`/proc/sys/${s}`, 'utf8')).trim()] as const),
    ),
  );
  const processes: string[] = [];
  for (const e of await readdir('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const exe = await readlink(`/proc/${e}/exe`).catch(() => '');
    if (NODE_PROGRAMS.test(exe)) processes.push(`${e} ${exe}`);
  }
  return {
    chains,
    links,
    mounts,
    kubepodsCgroups,
    sysctls,
    processes,
    paths: PATHS.filter((p) => existsSync(p)),
  };
}
