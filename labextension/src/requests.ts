/**
 * One answer shared by everyone who asked for it. Each asker asks on its own
 * channel, because a channel may never answer (a widget restored without its
 * kernel has a dead comm): the first answer settles it for all, and those
 * still waiting stop listening. A failure lets the next asker start over.
 * No DOM, no import: the loader bundles it, and it is tested under node.
 */

/** Ask once, hand the answer (or its failure) to `settle`; return what stops listening. */
export type Ask<T> = (settle: (outcome: Promise<T>) => void) => () => void;

interface Pending<T> {
  promise: Promise<T>;
  settle: (outcome: Promise<T>) => void;
  stops: Array<() => void>;
  done: boolean;
}

export class SharedRequests<T> {
  request(key: string, ask: Ask<T>): Promise<T> {
    let pending = this._pending.get(key);
    if (pending === undefined) {
      let resolve!: (outcome: Promise<T>) => void;
      const promise = new Promise<T>(adopt => {
        resolve = adopt;
      });
      const entry: Pending<T> = {
        promise,
        stops: [],
        done: false,
        settle: outcome => {
          if (entry.done) {
            return;
          }
          entry.done = true;
          resolve(outcome);
          for (const stop of entry.stops.splice(0)) {
            stop();
          }
        }
      };
      promise.catch(() => {
        if (this._pending.get(key) === entry) {
          this._pending.delete(key);
        }
      });
      this._pending.set(key, entry);
      pending = entry;
    }
    if (!pending.done) {
      const stop = ask(pending.settle);
      if (pending.done) {
        stop(); // it answered (or failed) at once
      } else {
        pending.stops.push(stop);
      }
    }
    return pending.promise;
  }

  private readonly _pending = new Map<string, Pending<T>>();
}
