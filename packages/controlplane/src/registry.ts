/**
 * The CNCF reference OCI registry (distribution), for tests that push container images:
 * a push is proven by a real registry accepting it and serving it back, not by our
 * reading of the distribution spec.
 *
 * The binary is built from its Go module into the project's binary cache like sops and
 * OPA (`<cacheRoot>/bin/registry-<version>/registry`, through {@link goToolBinary}: a
 * temporary folder renamed into place, under a lock, with progress lines). Each
 * {@link startRegistry} runs one registry of its own: filesystem storage in a fresh
 * temporary folder, plain HTTP on 127.0.0.1, no auth, so that tests never share blobs or
 * tags and nothing outlives them.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlaneError, tail } from './errors.ts';
import { freePort } from './free-port.ts';
import { type GoTool, goToolBinary, type ToolLog } from './go-tool.ts';
import { registerFolder, Supervised, unregisterFolder } from './process.ts';
import { REGISTRY_VERSION } from './versions.ts';

/**
 * The registry as a Go tool. Built by `go install`, its version variable keeps the value
 * committed in the module (`v3.1.2+unknown`), and `registry --version` prints
 * `registry github.com/distribution/distribution/v3 v3.1.2+unknown`.
 */
export const REGISTRY_TOOL: GoTool = {
  name: 'registry',
  version: REGISTRY_VERSION,
  pkg: 'github.com/distribution/distribution/v3/cmd/registry',
  versionArgs: ['--version'],
  versionMatches: (stdout) =>
    stdout.includes(` ${REGISTRY_VERSION}+`) || stdout.trimEnd().endsWith(` ${REGISTRY_VERSION}`),
};

function defaultLog(message: string): void {
  process.stderr.write(`[registry] ${message}\n`);
}

/** The path of the registry binary, building it first (minutes, once per machine and version) if the cache lacks it. */
export function registryBinary(log: ToolLog = defaultLog): Promise<string> {
  return goToolBinary(REGISTRY_TOOL, log);
}

export interface Registry {
  /** `127.0.0.1:PORT`, as an image reference's host (`docker://HOST/repo:tag`). */
  readonly host: string;
  /** `http://127.0.0.1:PORT`, the base of the `/v2/` API. */
  readonly url: string;
  /** Stops the registry and removes its storage. */
  stop(): Promise<void>;
}

/** A cold registry answers `/v2/` within a second; this is the margin for a loaded machine. */
const READY_TIMEOUT_MS = 30_000;

/** A port taken between probing and binding is retried with a new one, as the control plane does. */
const PORT_ATTEMPTS = 3;

/**
 * The registry's configuration: filesystem storage under `root`, HTTP on `addr`, no
 * auth. A fixed `http.secret` spares the warning the registry prints when it generates
 * one; the access log is off so that only warnings and errors reach the log file.
 */
export function registryConfig(root: string, addr: string): string {
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    '  accesslog:',
    '    disabled: true',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${JSON.stringify(root)}`,
    '  delete:',
    '    enabled: true',
    '  maintenance:',
    '    uploadpurging:',
    '      enabled: false',
    'http:',
    `  addr: ${addr}`,
    `  secret: ${randomBytes(16).toString('hex')}`,
    // Its own storage health check polls the folder every 10 s: noise for a test.
    'health:',
    '  storagedriver:',
    '    enabled: false',
    '',
  ].join('\n');
}

/**
 * Starts a registry of the caller's own on a free port of 127.0.0.1 and resolves once
 * `GET /v2/` answers 200. Builds the binary first when the cache lacks it. On failure,
 * nothing is left running and the folder is removed before the promise rejects.
 */
export async function startRegistry(log: ToolLog = defaultLog): Promise<Registry> {
  const bin = await registryBinary(log);
  const dir = await mkdtemp(join(tmpdir(), 'kube-operators-registry-'));
  registerFolder(dir);
  const removeDir = async (): Promise<void> => {
    await rm(dir, { recursive: true, force: true });
    unregisterFolder(dir);
  };
  try {
    const storage = join(dir, 'storage');
    await mkdir(storage);
    for (let attempt = 1; ; attempt++) {
      const host = `127.0.0.1:${await freePort()}`;
      const config = join(dir, 'config.yml');
      await writeFile(config, registryConfig(storage, host));
      const logFile = join(dir, `registry-${attempt}.log`);
      const proc = new Supervised({
        name: 'registry',
        command: bin,
        args: ['serve', config],
        logFile,
        // Its OpenTelemetry exporter defaults to OTLP on localhost:4318 and logs every
        // failed export; there is no collector here.
        env: { ...process.env, OTEL_TRACES_EXPORTER: 'none' },
      });
      const url = `http://${host}`;
      const ready = await waitReady(url, proc);
      if (ready === 'ready') {
        return {
          host,
          url,
          async stop() {
            await proc.stop();
            await removeDir();
          },
        };
      }
      await proc.stop();
      const output = await readFile(logFile, 'utf8').catch(() => '');
      if (ready === 'exited' && /address already in use/.test(output) && attempt < PORT_ATTEMPTS) continue;
      throw new ControlPlaneError(
        ready === 'exited'
          ? `the registry exited during start-up (${describeExit(proc.exit)}).`
          : `the registry did not answer 200 on ${url}/v2/ within ${READY_TIMEOUT_MS / 1000} s.`,
        `read its log below; the binary is ${bin}, delete its folder to rebuild it.`,
        tail(output),
      );
    }
  } catch (err) {
    await removeDir();
    throw err;
  }
}

function describeExit(exit: Supervised['exit']): string {
  if (!exit) return 'still running';
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

/** Polls `GET /v2/` until it answers 200, the process exits, or the deadline passes. */
async function waitReady(url: string, proc: Supervised): Promise<'ready' | 'exited' | 'timeout'> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (proc.exit) return 'exited';
    try {
      const res = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(2_000) });
      await res.arrayBuffer();
      if (res.status === 200) return 'ready';
    } catch {
      // Not listening yet.
    }
    await sleep(50);
  }
  return proc.exit ? 'exited' : 'timeout';
}
