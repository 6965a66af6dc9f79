import assert from 'node:assert/strict';
import { test } from 'node:test';

import { commandLine, DISCONNECTED_NOTICE, exitNotice, formatBytes, keptLabel, sessionLabel, sessionState, viewState } from '../src/format';

test('formatBytes uses SI units with one decimal', () => {
  assert.equal(formatBytes(1), '1 byte');
  assert.equal(formatBytes(999), '999 bytes');
  assert.equal(formatBytes(1000), '1.0 kB');
  assert.equal(formatBytes(1_234_567), '1.2 MB');
  assert.equal(formatBytes(999_999), '1.0 MB');
  assert.equal(formatBytes(3e12), '3.0 TB');
});

test('a session state is worded once, for labels and exit notices alike', () => {
  assert.equal(sessionState(true, null), 'running');
  assert.equal(sessionState(false, 0), 'exited with code 0');
  assert.equal(sessionState(false, 2), 'exited with code 2');
  assert.equal(sessionState(false, -15), 'killed by signal 15');
  assert.equal(sessionState(false, null), 'exited');
  assert.equal(exitNotice(0), '[exited with code 0]');
  assert.equal(exitNotice(-9), '[killed by signal 9]');
  assert.equal(exitNotice(null), '[exited]');
});

test('a session the user closed reads as closed, not as killed by its hangup', () => {
  assert.equal(sessionState(false, -1, true), 'closed');
  assert.equal(exitNotice(-1, true), '[closed]');
  assert.equal(viewState(false, -1, true, true), 'closed');
  assert.equal(viewState(false, -1, true), 'killed by signal 1'); // a hangup from elsewhere
});

test('a view that lost its kernel no longer says running', () => {
  assert.equal(viewState(true, null, true), 'running');
  assert.equal(viewState(true, null, false), 'ended with the kernel');
  // The kernel's `exited` with reason "kernel" says the same words, whatever the hangup's signal.
  assert.equal(viewState(false, -1, true, true, false, 'kernel'), 'ended with the kernel');
  assert.equal(viewState(false, -1, false, true, false, 'kernel'), 'ended with the kernel');
  assert.equal(exitNotice(-1, true, 'kernel'), `[${DISCONNECTED_NOTICE}]`);
  assert.equal(sessionState(false, -9, true, 'closed'), 'closed');
  assert.equal(sessionState(false, -9, false, 'exit'), 'killed by signal 9');
  assert.equal(viewState(true, null, false, false, true), 'disconnected'); // a kept session outlives its kernel
  assert.equal(viewState(false, 3, false), 'exited with code 3');
  // How it ended stays true after the kernel went.
  assert.equal(viewState(false, 3, false), 'exited with code 3');
});

test('a command line quotes as shlex.join does', () => {
  assert.equal(commandLine(['bash', '--norc', '-i']), 'bash --norc -i');
  assert.equal(commandLine(['bash', '-c', 'sleep 4; exit 3']), "bash -c 'sleep 4; exit 3'");
  assert.equal(commandLine(['echo', "it's", '']), `echo 'it'"'"'s' ''`);
  assert.equal(commandLine(['ls', 'a_b@c%d+e=f:g,h./-i']), 'ls a_b@c%d+e=f:g,h./-i');
  assert.equal(commandLine(['sleep 30 # build']), 'sleep 30 # build'); // an agent's cmd, as the kernel lists it
});

test('a named session is labelled by its name, the id beside it', () => {
  assert.equal(sessionLabel({ session_id: 3, name: 'build' }), 'build (session 3)');
  assert.equal(sessionLabel({ session_id: 0, name: null }), 'session 0');
  assert.equal(sessionLabel({ session_id: 7 }), 'session 7');
});


test('a kept session says so, with the restarts it lived through, as %uexec_sessions does', () => {
  assert.equal(keptLabel({ kept: false, restarts: 0 }), '');
  assert.equal(keptLabel({}), ''); // a kernel from before kept sessions
  assert.equal(keptLabel({ kept: true, restarts: 0 }), 'kept');
  assert.equal(keptLabel({ kept: true, restarts: 1 }), 'kept, 1 restart');
  assert.equal(keptLabel({ kept: true, restarts: 3 }), 'kept, 3 restarts');
  // A session whose keeper died says so where 'kept' stood.
  assert.equal(keptLabel({ kept: false, restarts: 1, note: 'no longer kept: its keeper died' }), 'no longer kept: its keeper died');
});
