import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { SessionInfo } from '../src/protocol';
import { endedCaption, findSession, modelGone, SESSION_MIME, sessionRef } from '../src/sessionref';

const info = (session_id: number, started: number): SessionInfo => ({
  session_id,
  command: ['bash', '-i'],
  pid: 100 + session_id,
  alive: true,
  exit_code: null,
  started,
  name: null
});

test("an output's session is read from its mime data; anything else is no session", () => {
  assert.equal(SESSION_MIME, 'application/vnd.uexec.session+json');
  assert.deepEqual(sessionRef({ session_id: 3, kernel_id: 'k', started: 12.5, title: 'bash -i' }), {
    session_id: 3,
    kernel_id: 'k',
    started: 12.5,
    title: 'bash -i'
  });
  assert.deepEqual(sessionRef({ session_id: 0 }), { session_id: 0, kernel_id: '', started: 0, title: '' });
  assert.equal(sessionRef({ session_id: -1 }), null);
  assert.equal(sessionRef({ session_id: '0' }), null);
  assert.equal(sessionRef(null), null);
});

test('a session is found again by its id and its start, not by its id alone', () => {
  const ref = sessionRef({ session_id: 0, kernel_id: 'k', started: 1000.25, title: '' })!;
  assert.equal(findSession(ref, [info(1, 1000.25), info(0, 1000.25)])?.session_id, 0);
  // A later session 0 of the same kernel (the kept one ended, a new one started): another program.
  assert.equal(findSession(ref, [info(0, 2000)]), null);
  assert.equal(findSession(ref, []), null);
});

test("a view's model is gone when the kernel has no comm of its id", () => {
  const data = { 'application/vnd.jupyter.widget-view+json': { model_id: 'm1' } };
  assert.equal(modelGone(data, {}), true);
  assert.equal(modelGone(data, { m1: { target_name: 'jupyter.widget' } }), false);
  assert.equal(modelGone({}, {}), false);
});

test("a gone session's line says which session and that this is its last screen", () => {
  const ref = sessionRef({ session_id: 2, title: 'bash -i' })!;
  assert.equal(endedCaption(ref, 'ended'), '[live terminal: session 2 (bash -i), ended; this is its last screen]');
});
