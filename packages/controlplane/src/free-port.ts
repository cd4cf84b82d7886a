/**
 * A TCP port free on 127.0.0.1, for a process that must be told its port before it
 * starts (etcd, an apiserver, a test's redis-server, OPA or sshd): the kernel picks one
 * for a listener that is closed at once. Another process may take it in between; the
 * callers accept that race, as envtest does.
 */
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    // Never what keeps a process alive, should the close be slow.
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}
