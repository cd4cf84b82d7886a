/**
 * A development aid: starts the e2e suite's environment (a plane with a node and every
 * image imported), records it for `KUBE_OPERATORS_E2E_REUSE=1`, and stays up until
 * Ctrl-C (which stops the plane and tears the node down). Never used by `npm test`.
 */
import { rmSync } from 'node:fs';
import { REUSE_FILE, recordForReuse, startNodeEnv } from './node-env.ts';

const env = await startNodeEnv((m) => process.stderr.write(`[dev-node] ${m}\n`));
await recordForReuse(env);
process.once('exit', () => rmSync(REUSE_FILE, { force: true }));
process.stderr.write(`[dev-node] up: KUBECONFIG=${env.kubeconfig}; reuse with KUBE_OPERATORS_E2E_REUSE=1\n`);
setInterval(() => undefined, 1 << 30);
