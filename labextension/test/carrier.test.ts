import assert from 'node:assert/strict';
import { test } from 'node:test';

import { CarrierBase, type CarrierListener } from '../src/carrier';
import type { FrontEndMessage, KernelMessage } from '../src/protocol';

class TestCarrier extends CarrierBase {
  sent: FrontEndMessage[] = [];
  send(msg: FrontEndMessage): void {
    this.sent.push(msg);
  }
  push(msg: KernelMessage): void {
    this.deliver(msg);
  }
  end(reason: string): void {
    this.close(reason);
  }
}

function recorder(): CarrierListener & { log: string[] } {
  const log: string[] = [];
  return {
    log,
    received: msg => log.push(msg.type),
    closed: reason => log.push(`closed: ${reason}`)
  };
}

test('every listener hears every message until it stops listening', () => {
  const carrier = new TestCarrier();
  const a = recorder();
  const b = recorder();
  const stopA = carrier.listen(a);
  carrier.listen(b);
  carrier.push({ type: 'sessions_changed' });
  stopA();
  carrier.push({ type: 'exited', session_id: 0, exit_code: 0 });
  assert.deepEqual(a.log, ['sessions_changed']);
  assert.deepEqual(b.log, ['sessions_changed', 'exited']);
});

test('closing is said once, and to a listener that comes later', () => {
  const carrier = new TestCarrier();
  const early = recorder();
  carrier.listen(early);
  carrier.end('the kernel restarted');
  carrier.end('the comm closed');
  const late = recorder();
  carrier.listen(late);
  assert.ok(carrier.isClosed);
  assert.deepEqual(early.log, ['closed: the kernel restarted']);
  assert.deepEqual(late.log, ['closed: the kernel restarted']);
});
