import { Logger } from '@nestjs/common';
import { describeError } from '../../utils/describe-error';
import { RedisConnection } from './redis-connection';
import { layoutRegistryKey, topicKeys } from './redis-keys';
import { TopicLayout } from './redis-topic-layout';

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
 */
export class RedisTopicLayouts {
  private readonly logger = new Logger(RedisTopicLayouts.name);
  private readonly views = new Map<string, LayoutView>();
  private readonly loading = new Map<string, Promise<LayoutView>>();
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
    /** Told when a topic's set of layouts changed after the first load. */
    private readonly onChange: (topic: string, view: LayoutView, previous: LayoutView) => void,
    /** Told once per topic, before the first call on it proceeds, when other layouts exist (e.g. to carry a pause over). */
    private readonly onFirstLoad: (topic: string, view: LayoutView) => Promise<void> = () => Promise.resolve(),
  ) {}

  /** The known layouts of a topic, if they were loaded (for reading). */
  view(topic: string): LayoutView | undefined {
    return this.views.get(topic);
  }

  /** The known layouts of a topic, if they were loaded and this instance's count announced (for arming). */
  writable(topic: string): LayoutView | undefined {
    return this.announcing.has(topic) ? this.views.get(topic) : undefined;
  }

  /**
   * Loads (once) and returns a topic's layouts; from then on they are
   * refreshed every check period. With `announce` (before arming or
   * consuming), this instance's count is announced first.
   */
  load(topic: string, announce = false): Promise<LayoutView> {
    const announceNow = announce && !this.announcing.has(topic);
    if (announceNow) this.announcing.add(topic);
    const known = this.views.get(topic);
    if (known && !announceNow) return Promise.resolve(known);
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

  /** The layout of a topic for one count (cached: its keys are built once). */
  layout(topic: string, count: number): TopicLayout {
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
        await this.refresh(topic).catch((error: unknown) => this.logger.debug(`Shard layouts of "${topic}" not refreshed: ${describeError(error)}`));
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
        this.logger.log(`"${topic}": no instance uses ${count} shard(s) any more and they are empty; they are no longer consumed`);
        continue;
      }
      counts.add(count);
    }
    if (own !== 1 && oneShardHolds) counts.add(1);
    const current = this.layout(topic, own);
    const others = [...counts].sort((a, b) => a - b).map((count) => this.layout(topic, count));
    const view: LayoutView = { current, others, all: [current, ...others] };
    const previous = this.views.get(topic);
    if (previous && sameLayouts(previous, view)) return previous;
    this.views.set(topic, view);
    if (previous) this.onChange(topic, view, previous);
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
