import { Injectable } from '@nestjs/common';
import { DelayContext, DelayModule, DelayService, OnDelayExpired, VirtualClock } from 'nestjs-delay';
import { useApps } from './support/apps';

/** A user is offline 30 s after their last heartbeat; every heartbeat re-arms the timer. */
@Injectable()
class Presence {
  readonly online = new Set<string>();
  readonly wentOffline: Array<{ user: string; at: number }> = [];

  constructor(private readonly delay: DelayService) {}

  async heartbeat(user: string): Promise<void> {
    this.online.add(user);
    await this.delay.schedule('user.offline', user, { delay: '30s' });
  }

  @OnDelayExpired('user.offline')
  markOffline({ key, firedAt }: DelayContext): void {
    this.online.delete(key);
    this.wentOffline.push({ user: key, at: firedAt.getTime() });
  }
}

describe('presence by heartbeat (wheel driver)', () => {
  const apps = useApps();

  it('keeps a user online while heartbeats come every 10 s, and marks them offline once after 30 s of silence', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock, driver: { type: 'wheel', tickMs: 10 } })], providers: [Presence] });
    const presence = app.get(Presence);

    // Ten minutes of heartbeats every 10 s.
    for (let beat = 0; beat < 60; beat++) {
      await presence.heartbeat('alice');
      await clock.advance('10s');
      expect(presence.online.has('alice')).toBe(true);
    }
    expect(presence.wentOffline).toEqual([]);
    expect(await app.get(DelayService).count('user.offline')).toBe(1);

    // The last heartbeat was 10 s ago; silence from now on.
    const lastBeat = clock.now() - 10_000;
    await clock.advance('19990ms');
    expect(presence.online.has('alice')).toBe(true);
    await clock.advance('10ms');
    expect(presence.online.has('alice')).toBe(false);
    expect(presence.wentOffline).toEqual([{ user: 'alice', at: lastBeat + 30_000 }]);

    await clock.advance('1h');
    expect(presence.wentOffline).toHaveLength(1);
    expect(await app.get(DelayService).count('user.offline')).toBe(0);
  });

  it('tracks users independently', async () => {
    const clock = new VirtualClock();
    const app = await apps.boot({ imports: [DelayModule.forRoot({ clock })], providers: [Presence] });
    const presence = app.get(Presence);
    await presence.heartbeat('alice');
    await presence.heartbeat('bob');
    await clock.advance('20s');
    await presence.heartbeat('bob');
    await clock.advance('10s');
    expect(presence.wentOffline.map((event) => event.user)).toEqual(['alice']);
    await clock.advance('20s');
    expect(presence.wentOffline.map((event) => event.user)).toEqual(['alice', 'bob']);
  });
});
