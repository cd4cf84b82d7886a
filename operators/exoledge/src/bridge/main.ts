/**
 * The console bridge process: `node operators/exoledge/src/bridge/main.ts [flags]`. Each
 * flag has an environment variable, for a Deployment's env. It serves the console the
 * EdgeSite manifests of its domains, each validated by a dry-run on the apiserver, and
 * never writes to the cluster. Exits 0 on SIGTERM or SIGINT, 1 on a failure, 2 on a bad
 * flag or a directory file it cannot read at the start.
 */
import { parseArgs } from 'node:util';
import { Transport } from '@operators/kit';
import { pino } from 'pino';
import { apiserverDryRun } from './apiserver-dry-run.ts';
import { JsonFileDirectory } from './directory-file.ts';
import { startBridge } from './server.ts';

export const DEFAULT_LISTEN = ':8080';

export const USAGE = `usage: node operators/exoledge/src/bridge/main.ts --directory FILE [flags]

  --directory FILE     (EXOLEDGE_BRIDGE_DIRECTORY) the console's directory of domains, JSON
                       ({"domains": {"<host>": <record>}}); re-read when it changes. Required.
  --listen ADDR        (EXOLEDGE_BRIDGE_LISTEN) host:port to serve on; default ${DEFAULT_LISTEN} (every interface)
  --kubeconfig PATH    (KUBECONFIG) default: ~/.kube/config, or the pod's service account
  -h, --help           print this help

Endpoints: GET /domains/manifest?host=H, POST /domains/security?host=H, GET /healthz.
Exit status: 0 after SIGTERM or SIGINT, 1 a failure, 2 a bad flag or an unreadable directory.
`;

function fail(message: string, code: number): never {
  process.stderr.write(`exoledge-bridge: ${message}\n`);
  process.exit(code);
}

/** `host:port`, `:port` or `[v6]:port`. */
export function parseListen(
  text: string,
): { readonly host: string | undefined; readonly port: number } | undefined {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  if (!m) return undefined;
  const port = Number(m[3]);
  if (port > 65_535) return undefined;
  const host = m[1] ?? m[2];
  return { host: host === '' ? undefined : host, port };
}

function flags() {
  try {
    return parseArgs({
      options: {
        directory: { type: 'string' },
        listen: { type: 'string' },
        kubeconfig: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (e) {
    // parseArgs refuses an unknown flag or a missing value with a TypeError: a usage error.
    fail(`${e instanceof Error ? e.message : String(e)}\n(--help lists the flags)`, 2);
  }
}

async function main(): Promise<void> {
  const values = flags();
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const env = process.env;
  const directoryPath = values.directory ?? env.EXOLEDGE_BRIDGE_DIRECTORY;
  if (!directoryPath) fail('--directory (or EXOLEDGE_BRIDGE_DIRECTORY) is required', 2);
  const listenText = values.listen ?? env.EXOLEDGE_BRIDGE_LISTEN ?? DEFAULT_LISTEN;
  const listen = parseListen(listenText);
  if (!listen) fail(`--listen: not host:port, :port or [v6]:port: ${listenText}`, 2);

  const log = pino({ name: 'exoledge-bridge' });
  const directory = await JsonFileDirectory.open(directoryPath, log).catch((err: unknown) =>
    fail(`--directory: ${err instanceof Error ? err.message : String(err)}`, 2),
  );
  // No client-side rate limit: one request per console action.
  const transport = await Transport.load(values.kubeconfig ?? env.KUBECONFIG);
  const bridge = await startBridge({
    directory,
    dryRun: apiserverDryRun(transport),
    log,
    port: listen.port,
    ...(listen.host !== undefined ? { host: listen.host } : {}),
  });
  log.info(
    { url: bridge.url, directory: directoryPath, apiserver: transport.server },
    'console bridge serving',
  );
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log.info({ signal }, 'console bridge stopping');
      void bridge
        .close()
        .then(() => transport.close())
        .then(() => process.exit(0));
    });
  }
}

// Run only as the entry point: tests import parseListen.
if (import.meta.main) {
  main().catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err), 1));
}
