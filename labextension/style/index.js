import '@xterm/xterm/css/xterm.css';
import './base.css';
// The live view's own styles, for a view reattach.ts draws where the widget (which loads them) is gone.
import './widget.css';
