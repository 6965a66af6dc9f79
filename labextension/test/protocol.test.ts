import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  asKernelMessage,
  FRONTEND_MESSAGE_TYPES,
  KERNEL_MESSAGE_TYPES,
  nextRequestId,
  type FrontEndMessage,
  type KernelMessage
} from '../src/protocol';

/** `true` only when A and B are the same union: the lists name every type. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const kernelListed: Same<KernelMessage['type'], (typeof KERNEL_MESSAGE_TYPES)[number]> = true;
const frontEndListed: Same<FrontEndMessage['type'], (typeof FRONTEND_MESSAGE_TYPES)[number]> =
  true;

test('type lists match the message unions, without repeats', () => {
  assert.ok(kernelListed && frontEndListed);
  assert.equal(new Set(KERNEL_MESSAGE_TYPES).size, KERNEL_MESSAGE_TYPES.length);
  assert.equal(new Set(FRONTEND_MESSAGE_TYPES).size, FRONTEND_MESSAGE_TYPES.length);
});

test('asKernelMessage keeps known types only', () => {
  assert.equal(asKernelMessage({ type: 'sessions_changed' })?.type, 'sessions_changed');
  assert.equal(asKernelMessage({ type: 'future_thing' }), null);
  assert.equal(asKernelMessage('data'), null);
  assert.equal(asKernelMessage(null), null);
});

test('request ids do not repeat', () => {
  const ids = new Set(Array.from({ length: 100 }, nextRequestId));
  assert.equal(ids.size, 100);
});
