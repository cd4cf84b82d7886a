/**
 * The list worker: a `worker_threads` thread that owns the decider's `ServedLists` and
 * does, for every view `ListLoader` sends it, what used to block the request thread for
 * most of a second with three million prefixes: selecting (hashing every complete
 * version), parsing, building the table. A new table goes back as its typed arrays,
 * their buffers transferred, not copied: the request thread only wraps them
 * (`PrefixTable.fromParts`) and swaps them in.
 *
 * The loader sends only what changed from one view to the next (see `ListLoader`); the
 * whole view is kept here. Views are applied one at a time, in the order sent, so the worker's state (what each
 * list serves, kept while its list is incomplete) is exactly what one thread applying
 * every view would hold. A view that throws is reported and changes nothing.
 *
 * When every list is complete and nothing waits, the loader retires this thread (its
 * heap goes with it); the next worker is first sent that last view with what it served
 * (`seed`), which rebuilds the same state, then the new view.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { parentPort } from 'node:worker_threads';
import type { LoaderReply, LoaderRequest } from './list-loader.ts';
import { ServedLists } from './served-lists.ts';
import type { ObservedConfigMap } from './shard-sets.ts';

const port = parentPort;
if (port === null) throw new Error('list-worker.ts runs as a worker thread: ListLoader starts it');

/**
 * A full collection, run after each rebuild. Parsing and building three million prefixes
 * leaves hundreds of megabytes of garbage in this thread's heap, which V8 would keep
 * (and count in the pod's memory) until allocation pressure came back; the thread is
 * idle until the next view, so collecting then costs no request anything. `gc` is only
 * exposed to contexts made after the flag is set, hence the new context.
 */
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

const lists = new ServedLists();
/** The view as the loader sends it: changed ConfigMaps only, so this copy is kept whole. */
const view = new Map<string, ObservedConfigMap>();

port.on('message', (request: LoaderRequest) => {
  for (const cm of request.configMaps) view.set(cm.name, cm);
  if (request.kind === 'put') return;
  if (request.kind === 'seed') {
    // The view a retired worker last applied, every list complete: applied here with what
    // it served, so this thread's state is that worker's. Not answered: the request
    // thread serves that table already.
    try {
      lists.apply([...view.values()], new Map(request.serving.map((s) => [s.name, s])));
    } catch {
      // It applied there, so it applies here; if not, the next view starts from nothing.
    }
    collect();
    return;
  }
  for (const name of request.removed) view.delete(name);
  let reply: LoaderReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const outcome = lists.apply([...view.values()]);
    if (outcome.rebuilt) {
      // The table's arrays leave with the reply; this thread never looks anything up.
      const parts = lists.table.parts;
      for (const a of [parts.v4Positions, parts.v4Index, parts.v4Sets, parts.v6Positions, parts.v6Sets]) {
        transfer.push(a.buffer as ArrayBuffer);
      }
      reply = { kind: 'applied', outcome, served: lists.served, parts };
    } else {
      reply = { kind: 'applied', outcome, served: lists.served };
    }
  } catch (error) {
    reply = { kind: 'failed', error };
  }
  port.postMessage(reply, transfer);
  if (reply.kind === 'applied' && reply.outcome.rebuilt) collect();
});
