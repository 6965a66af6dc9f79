import assert from 'node:assert/strict';
import { test } from 'node:test';

import { exitNotice, formatBytes, stateLabel } from '../src/format';

test('formatBytes uses SI units with one decimal', () => {
  assert.equal(formatBytes(1), '1 byte');
  assert.equal(formatBytes(999), '999 bytes');
  assert.equal(formatBytes(1000), '1.0 kB');
  assert.equal(formatBytes(1_234_567), '1.2 MB');
  assert.equal(formatBytes(999_999), '1.0 MB');
  assert.equal(formatBytes(3e12), '3.0 TB');
});

test('exit and state labels', () => {
  assert.equal(exitNotice(0), '[exited with code 0]');
  assert.equal(exitNotice(2), '[exited with code 2]');
  assert.equal(exitNotice(-15), '[killed by signal 15]');
  assert.equal(exitNotice(null), '[exited]');
  assert.equal(stateLabel(true, null), 'running');
  assert.equal(stateLabel(false, 0), 'exited (0)');
  assert.equal(stateLabel(false, null), 'exited');
});
