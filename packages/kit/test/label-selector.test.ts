/**
 * Label selectors evaluated in memory select what the apiserver's would: the expected
 * answers below follow the Kubernetes documentation of each operator.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseLabelSelector } from '../src/cache/label-selector.ts';

const web = { app: 'shop', tier: 'web', env: 'prod' };
const db = { app: 'shop', tier: 'db' };
const bare = {};

function selects(selector: string): boolean[] {
  const s = parseLabelSelector(selector);
  return [web, db, bare, undefined].map((l) => s.matches(l));
}

describe('label selectors in memory', () => {
  it('selects everything with the empty selector', () => {
    assert.deepEqual(selects(''), [true, true, true, true]);
  });

  it('matches equality (=, ==) and inequality, which also selects objects without the label', () => {
    assert.deepEqual(selects('tier=web'), [true, false, false, false]);
    assert.deepEqual(selects('tier==db'), [false, true, false, false]);
    assert.deepEqual(selects('tier!=web'), [false, true, true, true]);
  });

  it('matches set-based in and notin, notin also selecting objects without the label', () => {
    assert.deepEqual(selects('tier in (web, db)'), [true, true, false, false]);
    assert.deepEqual(selects('tier notin (web)'), [false, true, true, true]);
  });

  it('matches existence and absence', () => {
    assert.deepEqual(selects('env'), [true, false, false, false]);
    assert.deepEqual(selects('!env'), [false, true, true, true]);
  });

  it('requires every requirement (AND), commas inside a set not splitting it', () => {
    assert.deepEqual(selects('app=shop,tier in (web,db),!env'), [false, true, false, false]);
  });

  it('refuses a malformed selector, naming it, rather than matching nothing', () => {
    assert.throws(() => parseLabelSelector('tier in web'), /invalid label selector "tier in web"/);
    assert.throws(() => parseLabelSelector('=web'), /invalid label selector/);
  });
});
