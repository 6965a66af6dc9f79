import assert from 'node:assert/strict';
import { test } from 'node:test';

import { duration, noticeKind, noticeText } from '../src/notice';
import type { SessionEventMessage } from '../src/protocol';

const ended = (fields: Partial<SessionEventMessage>): SessionEventMessage => ({
  type: 'session_event',
  event: 'exited',
  session_id: 3,
  name: null,
  command: ['python', 'train.py'],
  exit_code: 1,
  seconds: 7383,
  line: null,
  by: null,
  ...fields
});

test('an end says the session, how it ended and after how long', () => {
  assert.equal(noticeText(ended({ name: 'train' })), "session 'train' exited with code 1 after 2 h 03 min");
  assert.equal(noticeText(ended({ exit_code: -9, seconds: 245 })), 'session 3 (python train.py) killed by signal 9 after 4 min 05 s');
  assert.equal(noticeText(ended({ exit_code: 0, seconds: 8.4, command: ['sh', '-c', 'make all'] })), "session 3 (sh -c 'make all') exited with code 0 after 8 s");
});

test('a match says the line and what waited for it', () => {
  const matched = ended({ event: 'matched', name: 'dev', exit_code: null, line: 'Listening on port 8000', by: 'until' });
  assert.equal(noticeText(matched), 'session \'dev\' printed "Listening on port 8000" (--until)');
  assert.equal(noticeText({ ...matched, by: 'watch' }), 'session \'dev\' printed "Listening on port 8000" (watch)');
  assert.equal(noticeKind(matched), 'info');
});

test('a cull says the kernel was idle, and for how long, and stays until read', () => {
  const culled = ended({ event: 'culled', name: 'train', exit_code: null, idle_seconds: 600.4 });
  assert.equal(noticeText(culled), "session 'train' ended: its kernel was culled as idle after 10 min 00 s");
  assert.equal(noticeKind(culled), 'error');
});

test('a failure stands out, a success does not', () => {
  assert.equal(noticeKind(ended({})), 'error');
  assert.equal(noticeKind(ended({ exit_code: 0 })), 'success');
});

test('durations round to what a person needs', () => {
  assert.deepEqual([0, 59.4, 60, 3599, 3600, 7383].map(duration), ['0 s', '59 s', '1 min 00 s', '59 min 59 s', '1 h 00 min', '2 h 03 min']);
});
