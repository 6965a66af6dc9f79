import assert from 'node:assert/strict';
import { test } from 'node:test';

import { pairByModel, widgetModelId } from '../src/saving';

const view = (id: string): Record<string, unknown> => ({
  'application/vnd.jupyter.widget-view+json': { model_id: id, version_major: 2, version_minor: 1 },
  'text/html': '<pre></pre><div class="uexec-screen-caption">[live terminal: session 0 (cat), running]</div>'
});
const status = { 'text/plain': '[session 0 running · 0.52 s]' };

test("a collaborator's page that drew the view after the status line still pairs the view with the view", () => {
  // The page that ran the cell: [view, status]; another page appended the updated view last.
  assert.deepEqual(pairByModel([view('a'), status], [status, view('a')]), [1, -1]);
});

test('two views in one cell pair by their model, in any order; a model not drawn pairs with nothing', () => {
  assert.deepEqual(pairByModel([view('a'), view('b'), view('c')], [view('b'), status, view('a')]), [2, 0, -1]);
});

test('one model shown twice: each shared output takes its own drawn one', () => {
  assert.deepEqual(pairByModel([view('a'), view('a')], [view('a'), view('a')]), [0, 1]);
});

test('only a widget view with a model id has an identity', () => {
  assert.equal(widgetModelId(view('m1')), 'm1');
  assert.equal(widgetModelId(status), null);
  assert.equal(widgetModelId({ 'application/vnd.jupyter.widget-view+json': { model_id: '' } }), null);
  assert.equal(widgetModelId(null), null);
  assert.equal(widgetModelId('text'), null);
});
