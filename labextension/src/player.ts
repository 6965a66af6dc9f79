/**
 * The replay of a recording (Python's `ReplayWidget`): the live view's
 * xterm.js, driven by a clock instead of a session. The kernel sends the
 * recording once, on request, as a buffer of `[time, code, data]` events
 * (behind a gateway, which carries no buffers, as the answer's `text`)
 * (`o` output, `r` a resize `COLSxROWS`); chapters (one per command the
 * shell ran) are a synced trait and name the event they start at, so that
 * seeking to one writes exactly the output that came before it.
 */

import { Terminal } from '@xterm/xterm';

import { asBytes } from './buffers';

import type { WidgetModel } from './widget';

type PlayerEvent = [number, string, string];

interface Chapter {
  index: number;
  time: number;
  label: string;
  exit_code: number | null;
}

const SPEEDS = [0.5, 1, 2, 4, 8];

export function renderPlayer({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
  const get = (name: string): any => (model.get as (name: string) => unknown)(name);
  el.classList.add('uexec-widget', 'uexec-player');

  const header = el.appendChild(document.createElement('div'));
  header.className = 'uexec-widget-header';
  const title = header.appendChild(document.createElement('span'));
  title.className = 'uexec-widget-title';
  title.textContent = `replay: ${get('title')}`;
  const clock = header.appendChild(document.createElement('span'));
  clock.className = 'uexec-widget-state uexec-player-clock';

  const screen = el.appendChild(document.createElement('div'));
  screen.className = 'uexec-player-screen';
  const term = new Terminal({ cols: get('cols'), rows: get('rows'), fontSize: 13, disableStdin: true, scrollback: 1000 });

  const controls = el.appendChild(document.createElement('div'));
  controls.className = 'uexec-player-controls';
  const play = controls.appendChild(document.createElement('button'));
  play.className = 'uexec-player-play';
  const seek = controls.appendChild(document.createElement('input'));
  seek.type = 'range';
  seek.className = 'uexec-player-seek';
  seek.min = '0';
  seek.step = '0.01';
  const speed = controls.appendChild(document.createElement('select'));
  speed.className = 'uexec-player-speed';
  for (const value of SPEEDS) {
    const option = speed.appendChild(document.createElement('option'));
    option.value = String(value);
    option.textContent = `${value}×`;
    option.selected = value === 1;
  }
  const chapterList = el.appendChild(document.createElement('ol'));
  chapterList.className = 'uexec-player-chapters';

  let events: PlayerEvent[] = [];
  let next = 0; // the first event not yet written
  let position = 0; // seconds into the playback
  let playing = false;
  let frame = 0;
  let lastTick = 0;
  let disposed = false;
  const duration = (): number => Number(get('duration')) || 0;

  const showState = (): void => {
    play.textContent = playing ? '❚❚ pause' : next >= events.length && events.length ? '↻ replay' : '▶ play';
    seek.max = String(duration());
    seek.value = String(Math.min(position, duration()));
    clock.textContent = `${format(position)} / ${format(duration())}`;
    el.dataset.position = position.toFixed(3);
    el.dataset.next = String(next);
  };

  /** Write events up to (not including) index `until`, as one write per run of output. */
  const writeUpTo = (until: number): void => {
    let text = '';
    for (; next < until; next++) {
      const [, code, data] = events[next];
      if (code === 'o') {
        text += data;
      } else if (code === 'r') {
        const size = /^(\d+)x(\d+)$/.exec(data);
        if (size) {
          term.write(text);
          text = '';
          term.resize(Number(size[1]), Number(size[2]));
        }
      }
    }
    term.write(text);
  };


  /** Start over from a blank terminal and write what comes before `index`. */
  const seekTo = (index: number, time: number): void => {
    term.reset();
    term.resize(get('cols'), get('rows'));
    next = 0;
    writeUpTo(index);
    position = time;
    showState();
  };

  const tick = (now: number): void => {
    if (!playing || disposed) {
      return;
    }
    position += ((now - lastTick) / 1000) * Number(speed.value);
    lastTick = now;
    writeUpTo(indexAtTime(events, position, next)); // time only moves on while playing
    if (next >= events.length) {
      playing = false;
      position = duration();
    } else {
      frame = requestAnimationFrame(tick);
    }
    showState();
  };

  const start = (): void => {
    if (next >= events.length) {
      seekTo(0, 0);
    }
    playing = true;
    lastTick = performance.now();
    frame = requestAnimationFrame(tick);
    showState();
  };

  const pause = (): void => {
    playing = false;
    cancelAnimationFrame(frame);
    showState();
  };

  play.addEventListener('click', () => (playing ? pause() : start()));
  seek.addEventListener('input', () => {
    const time = Number(seek.value);
    seekTo(indexAtTime(events, time), time);
  });

  const chapters = (get('chapters') ?? []) as Chapter[];
  chapters.forEach((chapter, number) => {
    const item = chapterList.appendChild(document.createElement('li'));
    const button = item.appendChild(document.createElement('button'));
    button.className = 'uexec-player-chapter';
    button.dataset.chapter = String(number + 1);
    const status = chapter.exit_code === null ? '' : ` → ${chapter.exit_code}`;
    button.textContent = `${format(chapter.time)}  $ ${chapter.label.split('\n')[0]}${status}`;
    if (chapter.exit_code) {
      button.classList.add('uexec-player-failed');
    }
    button.title = chapter.label;
    button.addEventListener('click', () => {
      pause();
      seekTo(chapter.index, chapter.time);
    });
  });

  const onAnswer = (content: any, buffers: unknown[] = []): void => {
    const text = buffers.length ? new TextDecoder().decode(asBytes(buffers[0])) : content?.text;
    if (content?.type === 'recording' && typeof text === 'string') {
      events = JSON.parse(text) as PlayerEvent[];
      // Open on the last screen, as the saved notebook shows it: play starts over.
      seekTo(events.length, duration());
      el.dataset.loaded = 'true';
    } else if (content?.type === 'error') {
      clock.textContent = String(content.message ?? 'the recording could not be loaded');
    }
  };
  model.on('msg:custom', onAnswer);

  // xterm measures its font on open: wait until the player is in the page.
  const opener = new ResizeObserver(() => {
    if (screen.clientWidth > 0 && !screen.querySelector('.xterm')) {
      term.open(screen);
      opener.disconnect();
    }
  });
  opener.observe(screen);
  showState();
  model.send({ type: 'recording' });

  return () => {
    disposed = true;
    cancelAnimationFrame(frame);
    opener.disconnect();
    model.off('msg:custom', onAnswer);
    term.dispose();
    el.replaceChildren();
  };
}

/** The first event after `time`, looking from `from` on. */
function indexAtTime(events: PlayerEvent[], time: number, from = 0): number {
  let index = from;
  while (index < events.length && events[index][0] <= time) {
    index++;
  }
  return index;
}

/** m:ss.s: a shell's commands are often less than a second apart. */
function format(seconds: number): string {
  const tenths = Math.max(0, Math.floor(seconds * 10));
  const whole = Math.floor(tenths / 10);
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}.${tenths % 10}`;
}
