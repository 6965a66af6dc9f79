import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SharedSize } from '../src/sizing';

const A = { rows: 24, cols: 120 };
const B = { rows: 53, cols: 101 };

test('a view the kernel gave another view\'s size draws at that size and says so', () => {
  const size = new SharedSize();
  size.fits(B);
  size.heard(A);
  assert.equal(size.ownSize, false);
  assert.deepEqual(size.drawn, A);
  assert.equal(size.note, "showing 24x120, another view's size · type here to take it");
});

test('typing takes the size back at once, without waiting to hear it', () => {
  const size = new SharedSize();
  size.fits(B);
  size.heard(A);
  size.used();
  assert.deepEqual(size.drawn, B);
  assert.equal(size.note, '');
  // Then another view types: the kernel says so.
  size.heard(A);
  assert.deepEqual(size.drawn, A);
});

test('the view in use that is resized keeps drawing at its own size; one that is not keeps the PTY\'s', () => {
  const inUse = new SharedSize();
  inUse.fits(A);
  inUse.heard(A);
  inUse.fits(B);
  assert.deepEqual(inUse.drawn, B);
  assert.equal(inUse.note, '');
  const other = new SharedSize();
  other.fits(B);
  other.heard(A);
  other.fits({ rows: 40, cols: 90 });
  assert.deepEqual(other.drawn, A);
  assert.match(other.note, /^showing 24x120/);
});

test('before the kernel said anything the view draws at its own size and says nothing', () => {
  const size = new SharedSize();
  assert.equal(size.drawn, null);
  size.fits(B);
  assert.deepEqual(size.drawn, B);
  assert.equal(size.note, '');
  assert.equal(size.ownSize, true);
});
