/**
 * A view's side of the size rule (the kernel's protocol/sizes.py): the view
 * a person used last (typed or clicked into) gives the terminal its size,
 * as tmux's `window-size latest`. Every view says its own size; the kernel
 * tells every view the terminal's (`attached`, `size`). A view that is not
 * the one in use draws the program at the terminal's size, not its own
 * (a full-screen program addresses rows and columns: drawn at another
 * width it is garbled), and says so in a note: "showing 24x120, another
 * view's size". It takes its own size back the moment it types.
 *
 * No DOM and no xterm: the terminal asks what to draw at and what to say.
 */

export interface Size {
  rows: number;
  cols: number;
}

export class SharedSize {
  /** This view fits `size` (its node's room): what it tells the kernel. */
  fits(size: Size): void {
    // Showing its own size until now, it is the view in use (or as good as):
    // the kernel takes the new one, and the view need not wait to hear it.
    if (this._own && this._pty && same(this._own, this._pty)) {
      this._pty = size;
    }
    this._own = size;
  }

  /** The kernel said the terminal's size (an `attached`, a `size`). */
  heard(size: Size): void {
    this._pty = size;
  }

  /** This view typed or was clicked into: the kernel gives the terminal its size before the keys. */
  used(): void {
    if (this._own) {
      this._pty = this._own;
    }
  }

  /** Whether the view shows the program at its own size. */
  get ownSize(): boolean {
    return !this._own || !this._pty || same(this._own, this._pty);
  }

  /** The size to draw at: the terminal's, once known; else the view's own. */
  get drawn(): Size | null {
    return this._pty ?? this._own;
  }

  /** What the view says while it draws at another view's size ('' while at its own). */
  get note(): string {
    return this.ownSize || !this._pty ? '' : `showing ${this._pty.rows}x${this._pty.cols}, another view's size · type here to take it`;
  }

  private _own: Size | null = null;
  private _pty: Size | null = null;
}

function same(a: Size, b: Size): boolean {
  return a.rows === b.rows && a.cols === b.cols;
}
