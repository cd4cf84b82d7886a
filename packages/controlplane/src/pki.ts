/**
 * The certificates of one control plane, generated fresh for each start: a CA, the
 * apiserver's serving certificate, an admin client certificate in `system:masters`,
 * and the service-account signing key pair. P-256 keys: generation takes
 * milliseconds, which keeps a warm start within seconds.
 */
// @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as webcrypto.Crypto);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface Pem {
  readonly cert: string;
  readonly key: string;
}

export interface Pki {
  readonly ca: Pem;
  readonly serving: Pem;
  /** CN=admin, O=system:masters: the client every test and `kubectl` uses. */
  readonly admin: Pem;
  /** Signs and verifies service-account tokens. */
  readonly serviceAccount: { readonly privateKey: string; readonly publicKey: string };
}

async function keys(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']) as Promise<webcrypto.CryptoKeyPair>;
}

async function privatePem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

async function publicPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('spki', key);
  return x509.PemConverter.encode(der, 'PUBLIC KEY');
}

function validity(): { notBefore: Date; notAfter: Date } {
  // Back-dated an hour against clock skew between processes; valid for a week,
  // far longer than any run and short enough that a leaked key is worthless.
  const now = Date.now();
  return { notBefore: new Date(now - 3_600_000), notAfter: new Date(now + 7 * 86_400_000) };
}

async function leaf(
  ca: { cert: x509.X509Certificate; keys: webcrypto.CryptoKeyPair },
  subject: string,
  usage: x509.ExtendedKeyUsage,
  sans?: x509.JsonGeneralNames,
): Promise<Pem> {
  const k = await keys();
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension([usage]),
    await x509.AuthorityKeyIdentifierExtension.create(ca.keys.publicKey),
  ];
  if (sans) extensions.push(new x509.SubjectAlternativeNameExtension(sans));
  const cert = await x509.X509CertificateGenerator.create({
    subject,
    issuer: ca.cert.subject,
    publicKey: k.publicKey,
    signingKey: ca.keys.privateKey,
    signingAlgorithm: ALG,
    extensions,
    ...validity(),
  });
  return { cert: cert.toString('pem'), key: await privatePem(k.privateKey) };
}

/**
 * `extraIps`: more addresses the apiserver's certificate names, for a plane with a node
 * (the node's address, and the `kubernetes` Service's ClusterIP that pods dial).
 */
export async function generatePki(extraIps: readonly string[] = []): Promise<Pki> {
  const caKeys = await keys();
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    name: 'CN=kube-operators-ts test CA',
    keys: caKeys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
    ...validity(),
  });
  const ca = { cert: caCert, keys: caKeys };
  const serving = await leaf(ca, 'CN=kube-apiserver', x509.ExtendedKeyUsage.serverAuth, [
    { type: 'ip', value: '127.0.0.1' },
    { type: 'ip', value: '::1' },
    ...extraIps.map((value) => ({ type: 'ip' as const, value })),
    { type: 'dns', value: 'localhost' },
    { type: 'dns', value: 'kubernetes' },
    { type: 'dns', value: 'kubernetes.default' },
    { type: 'dns', value: 'kubernetes.default.svc' },
  ]);
  const admin = await leaf(ca, 'CN=admin, O=system:masters', x509.ExtendedKeyUsage.clientAuth);
  const sa = await keys();
  return {
    ca: { cert: caCert.toString('pem'), key: await privatePem(caKeys.privateKey) },
    serving,
    admin,
    serviceAccount: { privateKey: await privatePem(sa.privateKey), publicKey: await publicPem(sa.publicKey) },
  };
}

/** A client certificate signed by the plane's CA, for tests that authenticate as a real user. */
export async function clientCertificate(caPem: Pem, user: string, groups: readonly string[]): Promise<Pem> {
  const caCert = new x509.X509Certificate(caPem.cert);
  const der = x509.PemConverter.decode(caPem.key)[0];
  if (!der) throw new Error('CA key PEM is empty');
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
  const publicKey = await caCert.publicKey.export(ALG, ['verify'], webcrypto as unknown as webcrypto.Crypto);
  const subject = [`CN=${user}`, ...groups.map((g) => `O=${g}`)].join(', ');
  return leaf(
    { cert: caCert, keys: { privateKey, publicKey } as webcrypto.CryptoKeyPair },
    subject,
    x509.ExtendedKeyUsage.clientAuth,
  );
}

/**
 * A serving certificate signed by the plane's CA for the given addresses and names
 * (a node's kubelet), so that clients verify it instead of skipping verification.
 */
export async function servingCertificate(
  caPem: Pem,
  commonName: string,
  ips: readonly string[],
  dnsNames: readonly string[],
): Promise<Pem> {
  const caCert = new x509.X509Certificate(caPem.cert);
  const der = x509.PemConverter.decode(caPem.key)[0];
  if (!der) throw new Error('CA key PEM is empty');
  const privateKey = await webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
  const publicKey = await caCert.publicKey.export(ALG, ['verify'], webcrypto as unknown as webcrypto.Crypto);
  return leaf(
    { cert: caCert, keys: { privateKey, publicKey } as webcrypto.CryptoKeyPair },
    `CN=${commonName}`,
    x509.ExtendedKeyUsage.serverAuth,
    [
      ...ips.map((value) => ({ type: 'ip' as const, value })),
      ...dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ],
  );
}
