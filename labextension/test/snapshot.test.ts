import assert from 'node:assert/strict';
import { test } from 'node:test';

import { caption, cssColour, isLiveViewData, screenHtml, screenText, withSnapshot, type ScreenCell } from '../src/snapshot';

function cells(text: string, style: Partial<ScreenCell> = {}): ScreenCell[] {
  return [...text].map(chars => ({ chars, width: 1, fg: 'default', bg: 'default', ...style }));
}

const BOX_START = '<pre class="uexec-screen" style="background:#000000;color:#ffffff;margin:0;padding:4px 6px;';

test('a screen is one <pre> as the kernel writes it: trailing blanks and blank rows left out', () => {
  const html = screenHtml([cells('$ ls   '), cells('a <b> & "c"'), cells('    '), []]);
  assert.ok(html.startsWith(BOX_START), html);
  assert.ok(html.endsWith('>$ ls\na &lt;b&gt; &amp; &quot;c&quot;</pre>'), html);
  assert.equal(screenHtml([cells('   ')]).endsWith('"></pre>'), true);
});

test('colours and attributes become inline styles, a run of one style one span', () => {
  const row = [
    ...cells('ok', { fg: 2, bold: true }),
    ...cells(' '),
    ...cells('x', { fg: '#FFAA00', bg: 196, underline: true, strikethrough: true }),
    ...cells('r', { inverse: true }),
    ...cells('  ', { bg: 4 })
  ];
  const html = screenHtml([row]);
  assert.ok(
    html.endsWith(
      '><span style="color:#4e9a06;font-weight:bold">ok</span> ' +
        '<span style="color:#ffaa00;background:#ff0000;text-decoration:underline line-through">x</span>' +
        '<span style="color:#000000;background:#ffffff">r</span>' +
        '<span style="background:#3465a4">  </span></pre>'
    ),
    html
  );
});

test('the 256 palette and the default colours', () => {
  assert.equal(cssColour('default', '#ffffff'), '#ffffff');
  assert.equal(cssColour(9, '#ffffff'), '#ef2929');
  assert.equal(cssColour(16, '#ffffff'), '#000000');
  assert.equal(cssColour(231, '#ffffff'), '#ffffff');
  assert.equal(cssColour(67, '#ffffff'), '#5f87af');
  assert.equal(cssColour(232, '#ffffff'), '#080808');
  assert.equal(cssColour(255, '#ffffff'), '#eeeeee');
  assert.equal(cssColour(256, '#ffffff'), '#ffffff');
  assert.equal(cssColour('red', '#000000'), '#000000');
});

test('a wide character takes its two cells once', () => {
  const row: ScreenCell[] = [
    { chars: '界', width: 2, fg: 'default', bg: 'default' },
    { chars: '', width: 0, fg: 'default', bg: 'default' },
    ...cells('!')
  ];
  assert.ok(screenHtml([row]).endsWith('>界!</pre>'));
});

test('text joins wrapped lines, drops trailing blank lines and keeps the newest characters from a line start', () => {
  const lines = [
    { text: 'first', wrapped: false },
    { text: 'a long li', wrapped: false },
    { text: 'ne, wrapped', wrapped: true },
    { text: 'last  ', wrapped: false },
    { text: '', wrapped: false },
    { text: '   ', wrapped: false }
  ];
  assert.equal(screenText(lines), 'first\na long line, wrapped\nlast');
  assert.equal(screenText(lines, 12), 'last');
  assert.equal(screenText([{ text: 'x'.repeat(10), wrapped: false }], 4), 'xxxx');
  assert.equal(screenText([]), '');
});

const OLD = {
  'application/vnd.jupyter.widget-view+json': { model_id: 'abc', version_major: 2, version_minor: 1 },
  'text/html': '<pre class="uexec-screen">tick-1</pre><div class="uexec-screen-caption">[live terminal: session 0 (cat), running]</div>',
  'text/plain': 'tick-1\n[live terminal: session 0 (cat), running]'
};

test("an output's data takes the view's screen, text and caption; the widget's own entry is kept", () => {
  const data = withSnapshot(OLD, { screen: '<pre>tick-9</pre>', text: 'tick-1\ntick-9', caption: caption(0, 'cat', 'running') });
  assert.deepEqual(data['application/vnd.jupyter.widget-view+json'], OLD['application/vnd.jupyter.widget-view+json']);
  assert.equal(data['text/html'], '<pre>tick-9</pre><div class="uexec-screen-caption">[live terminal: session 0 (cat), running]</div>');
  assert.equal(data['text/plain'], 'tick-1\ntick-9\n[live terminal: session 0 (cat), running]');
  assert.equal(withSnapshot(OLD, { screen: '', text: '', caption: 'c' })['text/plain'], '[c]');
});

test('the caption is escaped in HTML and says what the view says', () => {
  const data = withSnapshot(OLD, { screen: '<pre></pre>', text: '', caption: caption(3, "bash -c 'a<b'", 'exited with code 2') });
  assert.equal(
    data['text/html'],
    '<pre></pre><div class="uexec-screen-caption">[live terminal: session 3 (bash -c &#x27;a&lt;b&#x27;), exited with code 2]</div>'
  );
});

test('without text from the view, the old text keeps its body and takes the new caption', () => {
  const snapshot = { screen: '<pre>s</pre>', text: null, caption: caption(0, 'cat', 'closed') };
  assert.equal(withSnapshot(OLD, snapshot)['text/plain'], 'tick-1\n[live terminal: session 0 (cat), closed]');
  const noted = { ...OLD, 'text/plain': ['tick-1\n', '[live terminal: session 0 (cat), running]\n[a note]'] };
  assert.equal(withSnapshot(noted, snapshot)['text/plain'], 'tick-1\n[live terminal: session 0 (cat), closed]\n[a note]');
  assert.equal(withSnapshot({}, snapshot)['text/plain'], '[live terminal: session 0 (cat), closed]');
});

test("only a live view's output as the kernel wrote it takes a screen", () => {
  assert.equal(isLiveViewData(OLD), true);
  assert.equal(isLiveViewData({ ...OLD, 'text/html': [OLD['text/html'].slice(0, 40), OLD['text/html'].slice(40)] }), true);
  const box = { 'application/vnd.jupyter.widget-view+json': { model_id: 'box' }, 'text/plain': 'VBox(children=(...))' };
  assert.equal(isLiveViewData(box), false);
  assert.equal(isLiveViewData({ 'text/html': OLD['text/html'] }), false);
  assert.equal(isLiveViewData(null), false);
  assert.equal(isLiveViewData([OLD]), false);
});
