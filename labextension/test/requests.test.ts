import assert from 'node:assert/strict';
import { test } from 'node:test';

import { SharedRequests } from '../src/requests';

/** A channel that answers only when told to. */
class Channel {
  asked = 0;
  listening = false;
  private _settle: ((outcome: Promise<string>) => void) | null = null;
  ask = (settle: (outcome: Promise<string>) => void): (() => void) => {
    this.asked++;
    this.listening = true;
    this._settle = settle;
    return () => {
      this.listening = false;
    };
  };
  answer(outcome: Promise<string>): void {
    this._settle?.(outcome);
  }
}

test('a channel that never answers does not keep a later asker waiting', async () => {
  const requests = new SharedRequests<string>();
  const dead = new Channel();
  const live = new Channel();
  const first = requests.request('h', dead.ask);
  const second = requests.request('h', live.ask);
  assert.equal(dead.asked, 1);
  assert.equal(live.asked, 1); // it asks on its own channel too
  live.answer(Promise.resolve('module'));
  assert.equal(await first, 'module');
  assert.equal(await second, 'module');
  assert.equal(dead.listening, false); // the dead one stopped listening
});

test('once answered, a later asker asks nobody', async () => {
  const requests = new SharedRequests<string>();
  const channel = new Channel();
  const first = requests.request('h', channel.ask);
  channel.answer(Promise.resolve('module'));
  await first;
  const later = new Channel();
  assert.equal(await requests.request('h', later.ask), 'module');
  assert.equal(later.asked, 0);
});

test('a failure lets the next asker start over', async () => {
  const requests = new SharedRequests<string>();
  const failing = new Channel();
  const first = requests.request('h', failing.ask);
  failing.answer(Promise.reject(new Error('no module')));
  await assert.rejects(first, /no module/);
  const again = new Channel();
  const second = requests.request('h', again.ask);
  assert.equal(again.asked, 1);
  again.answer(Promise.resolve('module'));
  assert.equal(await second, 'module');
});
