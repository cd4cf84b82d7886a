/**
 * Runs the terdut-server STAND-IN (not the real server) as its own process, for local
 * runs and for tests that drive it over its `/_standin/` control surface:
 *
 *   node operators/terdut/src/server/main.ts [--port N] [--host H] [--public-url URL] [--server-version V]
 *
 * Prints `terdut-server stand-in listening on <url>`, logs one line per request, and
 * exits 0 on SIGINT or SIGTERM. State is in memory and dies with the process.
 */
import { parseArgs } from 'node:util';
import { LOG_PREFIX, SERVER_VERSIONS, type ServerVersion, startStandIn } from './stand-in.ts';

const USAGE = `usage: node operators/terdut/src/server/main.ts [--port N] [--host H] [--public-url URL] [--server-version ${SERVER_VERSIONS.join('|')}]`;

function fail(message: string): never {
  process.stderr.write(`${LOG_PREFIX}: ${message}\n${USAGE}\n`);
  process.exit(2);
}

let values: {
  port?: string;
  host?: string;
  'public-url'?: string;
  'server-version'?: string;
  help?: boolean;
};
try {
  ({ values } = parseArgs({
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'public-url': { type: 'string' },
      'server-version': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (e) {
  fail(e instanceof Error ? e.message : String(e));
}
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const port = values.port === undefined ? 0 : Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port must be 0-65535, got ${values.port}`);

const version = values['server-version'];
if (version !== undefined && !(SERVER_VERSIONS as readonly string[]).includes(version)) {
  fail(`--server-version must be one of ${SERVER_VERSIONS.join(', ')}, got ${version}`);
}

const standIn = await startStandIn({
  port,
  ...(version !== undefined ? { version: version as ServerVersion } : {}),
  ...(values.host !== undefined ? { host: values.host } : {}),
  ...(values['public-url'] !== undefined ? { publicUrl: values['public-url'] } : {}),
  log: (line) => process.stdout.write(`${line}\n`),
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    standIn.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
