import assert from 'node:assert/strict';
import { test } from 'node:test';

import { Terminal } from '@xterm/xterm';

import { drawWithWebgl, isSoftwareRenderer, moveTextareaInFrames, type IWebglRenderer, type Renderer } from '../src/renderer';

/** xterm's WebglAddon as the terminal sees it: loaded, disposed, and a context that can be lost. */
class FakeWebgl implements IWebglRenderer {
  disposed = 0;
  private _lost: (() => void)[] = [];

  readonly onContextLoss = (listener: () => void) => {
    this._lost.push(listener);
    return { dispose: () => undefined };
  };

  activate(): void {}

  dispose(): void {
    this.disposed++;
  }

  loseContext(): void {
    this._lost.forEach(listener => listener());
  }
}

class FakeTerminal {
  loaded: unknown[] = [];
  refuse = false;

  loadAddon(addon: unknown): void {
    if (this.refuse) {
      throw new Error('could not create a WebGL2 context');
    }
    this.loaded.push(addon);
  }
}

function draw(term: FakeTerminal, available: boolean): { addon: FakeWebgl; said: Renderer[] } {
  const addon = new FakeWebgl();
  const said: Renderer[] = [];
  drawWithWebgl(term, () => addon, () => available, renderer => said.push(renderer));
  return { addon, said };
}

test('with WebGL the rows are drawn by the WebGL addon', () => {
  const term = new FakeTerminal();
  const { addon, said } = draw(term, true);
  assert.deepEqual(term.loaded, [addon]);
  assert.deepEqual(said, ['webgl']);
});

test('without WebGL no addon is made and the DOM renderer stays', () => {
  const term = new FakeTerminal();
  let made = 0;
  const said: Renderer[] = [];
  drawWithWebgl(term, () => {
    made++;
    return new FakeWebgl();
  }, () => false, renderer => said.push(renderer));
  assert.equal(made, 0);
  assert.deepEqual(term.loaded, []);
  assert.deepEqual(said, ['dom']);
});

test('an addon that cannot start leaves the DOM renderer, without an error', () => {
  const term = new FakeTerminal();
  term.refuse = true;
  const { said } = draw(term, true);
  assert.deepEqual(term.loaded, []);
  assert.deepEqual(said, ['dom']);
});

test('a lost context disposes the addon, which gives the rows back to the DOM renderer', () => {
  const term = new FakeTerminal();
  const { addon, said } = draw(term, true);
  assert.equal(addon.disposed, 0);
  addon.loseContext();
  assert.equal(addon.disposed, 1);
  assert.deepEqual(said, ['webgl', 'dom']);
});

test('a WebGL that draws on the CPU is told from one a GPU runs', () => {
  const renderers: [string, boolean][] = [
    ['ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)', true],
    ['llvmpipe (LLVM 15.0.6, 256 bits)', true],
    ['softpipe', true],
    ['ANGLE (Microsoft, Microsoft Basic Render Driver Direct3D11 vs_5_0 ps_5_0, D3D11)', true],
    ['ANGLE (Intel, Mesa Intel(R) UHD Graphics 620 (KBL GT2), OpenGL 4.6)', false],
    ['ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 Direct3D11 vs_5_0 ps_5_0, D3D11)', false],
    ['Apple M1', false],
    ['WebKit WebGL', false]
  ];
  for (const [name, software] of renderers) {
    assert.equal(isSoftwareRenderer(name), software, name);
  }
});

/** xterm's Terminal as `moveTextareaInFrames` sees it, with frames driven by hand. */
function textareaTerminal() {
  const core = {
    moved: 0,
    _syncTextArea(this: { moved: number }) {
      this.moved++; // called on the core, as xterm calls it
    }
  };
  const term = { element: { isConnected: true }, _core: core };
  const frames: (() => void)[] = [];
  moveTextareaInFrames(term, callback => frames.push(callback));
  return { term, core, frames };
}

test('the textarea moves in the next frame, once however often the cursor moved before it', () => {
  const { term, core, frames } = textareaTerminal();
  term._core._syncTextArea();
  term._core._syncTextArea();
  term._core._syncTextArea();
  assert.equal(core.moved, 0, 'not as the output is parsed');
  assert.equal(frames.length, 1);
  frames.shift()!();
  assert.equal(core.moved, 1);
  term._core._syncTextArea();
  assert.equal(frames.length, 1, 'a later move asks for a frame again');
  frames.shift()!();
  assert.equal(core.moved, 2);
});

test('a terminal disposed before the frame is not touched', () => {
  const { term, core, frames } = textareaTerminal();
  term._core._syncTextArea();
  term.element.isConnected = false;
  frames.shift()!();
  assert.equal(core.moved, 0);
});

test('an xterm without the private method is left as it is', () => {
  const term = { _core: {} as Record<string, unknown> };
  moveTextareaInFrames(term, () => assert.fail('no frame is asked for'));
  assert.deepEqual(Object.keys(term._core), []);
  moveTextareaInFrames({}, () => assert.fail('no frame is asked for'));
});

test('the xterm we bundle still moves its textarea through the private method this relies on', () => {
  // An xterm update that renamed it would silently bring back the second layout per echo.
  const term = new Terminal();
  try {
    const core = (term as unknown as { _core: { _syncTextArea?: unknown } })._core;
    assert.equal(typeof core._syncTextArea, 'function');
    const frames: (() => void)[] = [];
    moveTextareaInFrames(term, callback => frames.push(callback));
    (core._syncTextArea as () => void)();
    assert.equal(frames.length, 1, 'the move waits for a frame');
  } finally {
    term.dispose();
  }
});
