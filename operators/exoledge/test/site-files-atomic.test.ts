/**
 * An allowlist ConfigMap volume read at the moment the kubelet has swapped `..data` to a
 * new version but not yet made the top-level link of a key that version adds (the
 * kubelet's atomic writer makes those links after the swap): the decider must read the
 * version `..data` names, whole, not the top-level links of two versions mixed. CI found
 * it under load: an edit adding a key applied without that key for one poll.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { parseAddress } from '../src/decider/prefix-table.ts';
import { SiteFiles } from '../src/decider/site-files.ts';
import { siteConfigText } from '../src/domain/edge-site/site-config.ts';
import { BASE_SPEC } from './support/decider-harness.ts';

it('reads the allowlist version ..data names whole, even before the kubelet links a key that version adds', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'exoledge-site-files-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const config = join(root, 'config.json');
  await writeFile(config, siteConfigText({ ...BASE_SPEC, security: { allowlists: ['crawlers'] } }));
  const dir = join(root, 'allowlists', 'crawlers');
  // Version 1, as the kubelet writes it: the version folder, ..data, the key's link.
  await mkdir(join(dir, '..v1'), { recursive: true });
  await writeFile(join(dir, '..v1', 'list'), '203.0.113.7\n');
  await symlink('..v1', join(dir, '..data'));
  await symlink(join('..data', 'list'), join(dir, 'list'));
  // Version 2 adds the key `more`; ..data is swapped, the link `more` is not made yet.
  await mkdir(join(dir, '..v2'));
  await writeFile(join(dir, '..v2', 'list'), '198.51.100.5\n');
  await writeFile(join(dir, '..v2', 'more'), '2001:db8:aa::/56\n');
  await symlink('..v2', join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));

  const files = new SiteFiles(config, join(root, 'allowlists'));
  await files.poll();
  const listed = (a: string): boolean => {
    const parsed = parseAddress(a);
    assert.equal(parsed.outcome, 'address', a);
    return parsed.outcome === 'address' && files.isAllowlisted(parsed.address);
  };
  assert.equal(listed('198.51.100.5'), true);
  assert.equal(listed('2001:db8:aa:ff::1'), true, 'the key version 2 adds is read with it');
  assert.equal(listed('203.0.113.7'), false);
});
