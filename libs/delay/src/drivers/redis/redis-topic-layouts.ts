import { Logger } from '@nestjs/common';
import { describeError } from '../../utils/describe-error';
import { RedisConnection } from './redis-connection';
import { layoutRegistryKey, topicKeys } from './redis-keys';
import { TopicLayout } from './redis-topic-layout';
import { quoteInput } from '../../utils/quote-input';

/** Most views of topics that are only read (never armed nor consumed here) held at once. */
export const MAX_READ_VIEWS = 256;

/** The layouts of a topic this instance knows of: its own, and those other instances may still fill or that still hold actions. */
export interface LayoutView {
  /** The layout of this instance's shard count: where it writes. */
  readonly current: TopicLayout;
  /** Other counts in use or not yet drained; per-key calls look there too. Usually empty. */
  readonly others: readonly TopicLayout[];
  /** `current` then `others`. */
  readonly all: readonly TopicLayout[];
}

/**
 * Which shard counts a topic's actions live under. Changing a topic's count
 * moves nothing: each count has keys of its own, new arming goes to the
 * instance's own count, and every instance keeps consuming (and finding
 * keys in) every count still in use until it is drained.
 *
 * Each instance announces its count per topic in a registry HASH every
 * check period, once it has armed or consumed the topic (an instance that
 * only reads it announces nothing); a count nobody announced for
 * `staleAfterMs` whose shards hold nothing (no action, no pause mark) is
 * forgotten, and from then on per-key calls cost one round trip again. The
 * one-shard layout is also known while it holds anything, since versions
 * without shards kept no registry.
 *
 * Only the topics this instance arms or consumes are kept and refreshed
 * every check period. A topic that is only read (count, list, get, cancel,
 * isPaused...) gets a view that is used for one check period and then
 * loaded again on the next read; at most MAX_READ_VIEWS such views are
 * held (least recently used go first), and none is ever refreshed by the
 * timer, so reading many topics leaves neither memory nor idle Redis calls
 * behind.
 */
export class RedisTopicLayouts {
  private readonly logger = new Logger(RedisTopicLayouts.name);
  /** Views of the topics this instance announces for, refreshed every check period. */
  private readonly views = new Map<string, LayoutView>();
  /** Views of topics only read here, oldest use first; each is good until `until` (ms, performance.now()). */
  private readonly readViews = new Map<string, { readonly view: LayoutView; readonly until: number }>();
  private readonly loading = new Map<string, Promise<LayoutView>>();
  /** Layouts of the announced topics, by count and topic (built once: views are compared by identity). */
  private readonly layouts = new Map<string, TopicLayout>();
  /** Topics this instance armed or consumes: it announces its count for them. */
  private readonly announcing = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing = false;

  constructor(
    private readonly connection: RedisConnection,
    private readonly prefix: string,
    /** This instance's shard count for a topic. */
    readonly countOf: (topic: string) => number,
    private readonly staleAfterMs: number,
    /** How long a view of a topic only read is used before it is loaded again. */
    private readonly readViewMs: number,
    /** Told when a topic's set of layouts changed after the first load. */
    private readonly onChange: (topic: string, view: LayoutView, previous: LayoutView) => void,
    /** Told once per topic, before the first call on it proceeds, when other layouts exist (e.g. to carry a pause over). */
    private readonly onFirstLoad: (topic: string, view: LayoutView) => Promise<void> = () => Promise.resolve(),
  ) {}

  /** The known layouts of a topic, if they were loaded (for reading) and, for a topic only read, lately. */
  view(topic: string): LayoutView | undefined {
    return this.views.get(topic) ?? this.freshReadView(topic);
  }

  /** How many topics' views are held: those announced for, and (bounded) those only read. */
  get size(): { readonly announced: number; readonly read: number } {
    return { announced: this.views.size, read: this.readViews.size };
  }

  /** The known layouts of a topic, if they were loaded and this instance's count announced (for arming). */
  writable(topic: string): LayoutView | undefined {
    return this.announcing.has(topic) ? this.views.get(topic) : undefined;
  }

  /**
   * Loads and returns a topic's layouts. With `announce` (before arming or
   * consuming), this instance's count is announced first, and the view is
   * kept and refreshed every check period; without, a view of a topic only
   * read is used for one check period (bounded, see MAX_READ_VIEWS).
   */
  load(topic: string, announce = false): Promise<LayoutView> {
    const announceNow = announce && !this.announcing.has(topic);
    if (announceNow) this.announcing.add(topic);
    const kept = this.views.get(topic);
    if (kept && !announceNow) return Promise.resolve(kept);
    const known = kept ?? this.readViews.get(topic)?.view;
    // Arming waits for the kept view: a view made for reading is not announced.
    const read = announce ? undefined : this.freshReadView(topic);
    if (read) return Promise.resolve(read);
    const inFlight = announceNow ? undefined : this.loading.get(topic);
    if (inFlight) return inFlight;
    const loading: Promise<LayoutView> = this.refresh(topic)
      .then(async (view) => {
        if (!known && view.others.length > 0) await this.onFirstLoad(topic, view);
        return view;
      })
      .finally(() => {
        if (this.loading.get(topic) === loading) this.loading.delete(topic);
      });
    this.loading.set(topic, loading);
    return loading;
  }

  /** The layout of a topic for one count (cached for an announced topic: its keys are built once). */
  layout(topic: string, count: number): TopicLayout {
    if (!this.announcing.has(topic)) return new TopicLayout(this.prefix, topic, count);
    const id = `${count}|${topic}`;
    let layout = this.layouts.get(id);
    if (!layout) this.layouts.set(id, (layout = new TopicLayout(this.prefix, topic, count)));
    return layout;
  }

  start(everyMs: number): void {
    this.timer = setInterval(() => void this.refreshAll(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async refreshAll(): Promise<void> {
    if (this.refreshing || this.connection.isClosed) return;
    this.refreshing = true;
    try {
      for (const topic of this.views.keys()) {
        await this.refresh(topic).catch((error: unknown) => this.logger.debug(`Shard layouts of ${quoteInput(topic)} not refreshed: ${describeError(error)}`));
      }
    } finally {
      this.refreshing = false;
    }
  }

  /** Announces this instance's count, reads the others, forgets drained ones nobody uses. */
  private async refresh(topic: string): Promise<LayoutView> {
    const own = this.countOf(topic);
    const oneShard = topicKeys(this.prefix, topic);
    const registry = layoutRegistryKey(this.prefix, topic);
    const reply = await this.connection.run<number[]>('layouts', [registry, oneShard.env, oneShard.deadIndex, oneShard.paused], [this.announcing.has(topic) ? own : 0]);
    const now = Number(reply[0]);
    const oneShardHolds = Number(reply[1]) === 1;
    const counts = new Set<number>();
    for (let n = 2; n < reply.length; n += 2) {
      const count = Number(reply[n]);
      if (count === own || counts.has(count)) continue;
      const stale = now - Number(reply[n + 1]) > this.staleAfterMs;
      if (stale && (await this.isEmpty(topic, count, oneShardHolds)) && (await this.connection.run<number>('retireLayout', [registry], [count, this.staleAfterMs])) === 1) {
        this.logger.log(`${quoteInput(topic)}: no instance uses ${count} shard(s) any more and they are empty; they are no longer consumed`);
        continue;
      }
      counts.add(count);
    }
    if (own !== 1 && oneShardHolds) counts.add(1);
    const current = this.layout(topic, own);
    const others = [...counts].sort((a, b) => a - b).map((count) => this.layout(topic, count));
    const view: LayoutView = { current, others, all: [current, ...others] };
    if (!this.announcing.has(topic)) return this.keepForReading(topic, view);
    this.readViews.delete(topic);
    const previous = this.views.get(topic);
    if (previous && sameLayouts(previous, view)) return previous;
    this.views.set(topic, view);
    if (previous) this.onChange(topic, view, previous);
    return view;
  }

  /** A view of a topic only read, if it is recent enough (marked as just used). */
  private freshReadView(topic: string): LayoutView | undefined {
    const entry = this.readViews.get(topic);
    if (!entry) return undefined;
    this.readViews.delete(topic);
    if (performance.now() > entry.until) return undefined;
    this.readViews.set(topic, entry);
    return entry.view;
  }

  /** Holds the view of a topic only read for one check period, dropping the least recently used past MAX_READ_VIEWS. */
  private keepForReading(topic: string, view: LayoutView): LayoutView {
    this.readViews.delete(topic);
    this.readViews.set(topic, { view, until: performance.now() + this.readViewMs });
    while (this.readViews.size > MAX_READ_VIEWS) {
      const oldest = this.readViews.keys().next().value;
      if (oldest === undefined) break;
      this.readViews.delete(oldest);
    }
    return view;
  }

  /** No action, pending or dead, in any shard of the layout. */
  private async isEmpty(topic: string, count: number, oneShardHolds: boolean): Promise<boolean> {
    if (count === 1) return !oneShardHolds;
    const layout = this.layout(topic, count);
    const holds = await Promise.all(layout.shards.map((keys) => this.connection.run<number>('holds', [keys.env, keys.deadIndex, keys.paused], [])));
    return holds.every((held) => Number(held) === 0);
  }
}

function sameLayouts(a: LayoutView, b: LayoutView): boolean {
  return a.all.length === b.all.length && a.all.every((layout, n) => layout === b.all[n]);
}
