import { readFileSync } from 'node:fs';
import { KubeClient } from '@operators/kit';
const admin = await KubeClient.load(readFileSync('/tmp/exp/kubeconfig-path', 'utf8'));
const one = (i: number) => admin.transport.request({ method: 'POST', path: '/apis/cel.test/v1/namespaces/default/probes', query: { dryRun: 'All' },
  body: `{"apiVersion":"cel.test/v1","kind":"Probe","metadata":{"name":"x${i}"},"spec":{"probe":${i},"f":2.0}}` }).catch((e) => String(e).slice(0, 200));
let t = Date.now();
for (let i = 1000; i < 1250; i++) await one(i);
console.log('seq', Date.now() - t);
t = Date.now();
const q = [...Array(250).keys()].map((i) => i + 1000);
await Promise.all(Array.from({ length: 8 }, async () => { for (let i = q.shift(); i !== undefined; i = q.shift()) await one(i); }));
console.log('par8', Date.now() - t);
console.log(await one(1));
