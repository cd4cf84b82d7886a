/**
 * Child processes that must never outlive us.
 *
 * Three layers, because a leaked etcd holds a port and a data folder until someone
 * notices:
 *  1. `stop()` terminates politely (SIGTERM, then SIGKILL after a grace period) and
 *     waits for the exit.
 *  2. SIGINT, SIGTERM and SIGHUP handlers in this process stop every child and remove
 *     every registered folder before exiting with the conventional code.
 *  3. Where util-linux's `setpriv` exists (every Debian), children are started with
 *     a parent-death signal, so the kernel kills them even if this process is
 *     SIGKILLed and no handler runs.
 *
 * Children run in their own process group (`detached`): a terminal's Ctrl-C signals the
 * whole foreground group at once, and an etcd and kube-apiserver that shut down at the
 * same moment as the operators leave those operators waiting on a dying server (55 s
 * to exit, measured). In their own group they hear only us, and we stop them last.
 * A second SIGINT while stopping is the user insisting: everything is killed at once.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, openSync, rmSync } from 'node:fs';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

const live = new Set<Supervised>();
const folders = new Set<string>();
/**
 * Asynchronous clean-ups an interrupt runs beside stopping the children: a node's
 * teardown (mounts, links, iptables rules), which removing a folder cannot do.
 */
const cleanups = new Set<() => Promise<void>>();
let handlersInstalled = false;

export interface SpawnOptions {
  readonly name: string;
  readonly command: string;
  readonly args: readonly string[];
  /** stdout and stderr go here, for error messages and post-mortems. */
  readonly logFile: string;
  readonly env?: NodeJS.ProcessEnv;
}

export class Supervised {
  readonly name: string;
  readonly logFile: string;
  private readonly child: ChildProcess;
  private exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  constructor(opts: SpawnOptions) {
    installHandlers();
    this.name = opts.name;
    this.logFile = opts.logFile;
    const fd = openSync(opts.logFile, 'a');
    const [cmd, args] = SETPRIV
      ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', opts.command, ...opts.args]]
      : [opts.command, [...opts.args]];
    this.child = spawn(cmd, args, {
      stdio: ['ignore', fd, fd],
      env: opts.env ?? process.env,
      detached: true,
    });
    this.exited = once(this.child, 'exit').then(([code, signal]) => {
      this.exitInfo = { code: code as number | null, signal: signal as NodeJS.Signals | null };
      live.delete(this);
      return this.exitInfo;
    });
    // A spawn error (ENOENT, EACCES) also ends the process; surface it as an exit.
    this.child.once('error', () => {
      this.exitInfo ??= { code: 127, signal: null };
      live.delete(this);
    });
    live.add(this);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Set once the process has exited; undefined while it runs. */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    return this.exitInfo;
  }

  /** Resolves when the process exits, whoever made it exit. */
  get done(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async stop(graceMs = 5_000): Promise<void> {
    if (this.exitInfo || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** For tests of crash handling: kill without grace. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.child.kill(signal);
  }

  /** Synchronous last resort, for the process 'exit' hook. */
  killNow(): void {
    try {
      this.child.kill('SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** A folder removed when the process is interrupted (and by its owner's normal stop). */
export function registerFolder(path: string): void {
  installHandlers();
  folders.add(path);
}

export function unregisterFolder(path: string): void {
  folders.delete(path);
}

/** Registers a clean-up for interrupts (see {@link cleanups}); returns its removal. */
export function registerCleanup(fn: () => Promise<void>): () => void {
  installHandlers();
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}

/** How many supervised children are alive: 0 after every plane stopped. */
export function liveChildren(): number {
  return live.size;
}

/**
 * Kills every supervised child with SIGKILL and removes every registered folder, now:
 * the answer to a second Ctrl-C. Synchronous, so it also runs in an 'exit' hook.
 */
export function forceStopAll(): void {
  for (const c of live) c.killNow();
  for (const f of folders) rmSync(f, { recursive: true, force: true });
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const cleanupSync = forceStopAll;
  process.once('exit', cleanupSync);
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals, code: number): void => {
    if (stopping) {
      // The second signal: no more grace.
      cleanupSync();
      process.exit(code);
    }
    stopping = true;
    // Stop gracefully first (etcd flushes), but never hang an interrupted run.
    const all = [...[...cleanups].map((fn) => fn()), ...[...live].map((c) => c.stop(2_000))];
    // A node's teardown takes a few seconds more than stopping processes.
    const deadline = setTimeout(
      () => {
        cleanupSync();
        process.exit(code);
      },
      cleanups.size > 0 ? 10_000 : 4_000,
    );
    deadline.unref();
    void Promise.allSettled(all).then(() => {
      cleanupSync();
      process.stderr.write(`[controlplane] ${signal}: stopped the control plane\n`);
      process.exit(code);
    });
  };
  process.on('SIGINT', () => onSignal('SIGINT', 130));
  process.on('SIGTERM', () => onSignal('SIGTERM', 143));
  process.on('SIGHUP', () => onSignal('SIGHUP', 129));
}
