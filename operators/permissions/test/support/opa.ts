/**
 * A real OPA server for the bundle tests: `opa run --server` on 127.0.0.1 and a free
 * port, configured (a config file in a temp folder, nothing of the machine's) to poll
 * our bundle service every 1–2 s, with the sample policy `policy/authz.rego` loaded
 * from disk. The policy's package (`authz`) is outside the bundle's root
 * (`shturval`), so the bundle and the file never claim the same path.
 *
 * `startOpa` resolves once `/health?bundles` answers 200, i.e. once OPA has activated
 * our bundle at least once (pass `waitForBundle: false` to start against a service
 * that is not ready yet). Stopping sends SIGTERM and waits for the exit; with
 * util-linux's setpriv the kernel kills OPA too if the test process dies first.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@operators/controlplane/testing';
import { opaBinary } from './opa-binary.ts';

/** The sample policy: package `authz`, rule `allow`. */
export const SAMPLE_POLICY = join(import.meta.dirname, 'policy', 'authz.rego');

/** How long OPA gets to serve and activate the bundle. */
const READY_TIMEOUT_MS = 30_000;
/** Ports tried before giving up (another process may take the free port between probe and bind). */
const PORT_ATTEMPTS = 5;
/** The bundle's name in OPA's config (and under data.system.bundles). */
const BUNDLE_NAME = 'shturval';

const SETPRIV = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));

export interface OpaOptions {
  /** The bundle service's base URL, e.g. `http://127.0.0.1:8082`. */
  readonly serviceUrl: string;
  /** Default `/bundle`. */
  readonly resource?: string;
  /** OPA's polling delay between successful downloads, seconds. Default 1 and 2. */
  readonly minDelaySeconds?: number;
  readonly maxDelaySeconds?: number;
  /** Policy files loaded beside the bundle. Default: the sample policy. */
  readonly policies?: readonly string[];
  /** Default true: resolve only once the bundle is activated. */
  readonly waitForBundle?: boolean;
}

export interface Opa {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** `POST /v1/data/<path>` with `input`; the `result` (undefined when the rule is undefined). */
  query(path: string, input: unknown): Promise<unknown>;
  /** The revision of the bundle OPA has activated, from `data.system.bundles`, if any. */
  activeRevision(): Promise<string | undefined>;
  /** Whether `/health?bundles` answers 200. */
  healthy(): Promise<boolean>;
  /** What OPA logged, for a failing test's message. */
  log(): string;
  stop(): Promise<void>;
}

export async function startOpa(opts: OpaOptions): Promise<Opa> {
  const bin = await opaBinary();
  const dir = await mkdtemp(join(tmpdir(), 'permissions-opa-'));
  const config = join(dir, 'config.json');
  await writeFile(
    config,
    JSON.stringify({
      services: { [BUNDLE_NAME]: { url: opts.serviceUrl } },
      bundles: {
        [BUNDLE_NAME]: {
          service: BUNDLE_NAME,
          resource: opts.resource ?? '/bundle',
          polling: {
            min_delay_seconds: opts.minDelaySeconds ?? 1,
            max_delay_seconds: opts.maxDelaySeconds ?? 2,
          },
        },
      },
    }),
  );
  let lastError = '';
  for (let attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const opaArgs = [
      'run',
      '--server',
      '--addr',
      `127.0.0.1:${port}`,
      '--config-file',
      config,
      '--skip-version-check',
      '--log-format',
      'text',
      '--log-level',
      'info',
      ...(opts.policies ?? [SAMPLE_POLICY]),
    ];
    const [cmd, args] = SETPRIV
      ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', bin, ...opaArgs]]
      : [bin, opaArgs];
    const child = spawn(cmd, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (c: Buffer): void => {
      output += c.toString();
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const exited = once(child, 'exit');
    const alive = (): boolean => child.exitCode === null && child.signalCode === null;

    const healthy = async (bundles: boolean): Promise<boolean> => {
      try {
        const res = await fetch(`${url}/health${bundles ? '?bundles' : ''}`);
        await res.arrayBuffer();
        return res.status === 200;
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let ready = false;
    while (alive() && Date.now() < deadline) {
      if (await healthy(opts.waitForBundle ?? true)) {
        ready = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    if (!ready) {
      if (alive()) child.kill('SIGKILL');
      await exited;
      lastError = output;
      // A taken port makes OPA exit at once; anything else is not a port race.
      if (/address already in use/.test(output)) continue;
      await rm(dir, { recursive: true, force: true });
      throw new Error(`opa did not become healthy within ${READY_TIMEOUT_MS} ms:\n${output}`);
    }

    const stop = async (): Promise<void> => {
      if (alive()) {
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    };
    return {
      url,
      async query(path, input) {
        const res = await fetch(`${url}/v1/data/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ input }),
        });
        const body = (await res.json()) as { result?: unknown };
        if (res.status !== 200) throw new Error(`opa answered ${res.status}: ${JSON.stringify(body)}`);
        return body.result;
      },
      async activeRevision() {
        const res = await fetch(`${url}/v1/data/system/bundles/${BUNDLE_NAME}/manifest/revision`);
        const body = (await res.json()) as { result?: unknown };
        return typeof body.result === 'string' ? body.result : undefined;
      },
      healthy: () => healthy(true),
      log: () => output,
      stop,
    };
  }
  await rm(dir, { recursive: true, force: true });
  throw new Error(`opa did not start after ${PORT_ATTEMPTS} attempts:\n${lastError}`);
}
