import { Transactional } from '@nestjs-cls/transactional';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { DelayClock, DelayService } from 'nestjs-delay';
import { NotFoundError } from '../common/errors/not-found.error';
import { shopConfig } from '../config/shop.config';
import { ShopConfig } from '../config/shop-config.interface';
import { USER_OFFLINE, UserOfflinePayload } from './presence-topics';
import { PresenceRepository } from './presence.repository';
import { UserPresence } from './user-presence';

/** Online while heartbeats keep coming; offline after `OFFLINE_AFTER` of silence. */
@Injectable()
export class PresenceService {
  private readonly logger = new Logger(PresenceService.name);

  constructor(
    private readonly presences: PresenceRepository,
    private readonly delay: DelayService,
    private readonly clock: DelayClock,
    @Inject(shopConfig.KEY) private readonly config: ShopConfig,
  ) {}

  /**
   * One pending action per user, pushed back by each heartbeat: a debounce,
   * not one timer per heartbeat. The presence and its action change in one
   * transaction.
   */
  @Transactional()
  async heartbeat(userId: string): Promise<UserPresence> {
    const lastSeenAt = new Date(this.clock.now()).toISOString();
    // Locks the user's row (if any) first: a heartbeat and a firing offline action take turns.
    await this.presences.findByUserIdForUpdate(userId);
    const { dueAt } = await this.delay.schedule<UserOfflinePayload>(USER_OFFLINE, userId, {
      delay: this.config.offlineAfterMs,
      payload: { lastSeenAt },
      ifExists: 'replace',
    });
    const presence: UserPresence = { userId, online: true, lastSeenAt, offlineDueAt: dueAt.toISOString() };
    await this.presences.save(presence);
    return presence;
  }

  async get(userId: string): Promise<UserPresence> {
    const presence = await this.presences.findByUserId(userId);
    if (!presence) throw new NotFoundError('User presence', userId);
    return presence;
  }

  list(): Promise<UserPresence[]> {
    return this.presences.findAll();
  }

  /**
   * The `user.offline` action. It only acts if no heartbeat came after the
   * one that armed it: a late or leftover action (say, from before a restart
   * with the Redis driver) cannot take a live user offline.
   */
  @Transactional()
  async markOfflineIfSilent(userId: string, armedBy: UserOfflinePayload | undefined): Promise<void> {
    const presence = await this.presences.findByUserIdForUpdate(userId);
    if (!presence?.online || presence.lastSeenAt !== armedBy?.lastSeenAt) {
      this.logger.debug(`Offline action for "${userId}" ignored: ${presence ? 'a newer heartbeat or already offline' : 'unknown user'}`);
      return;
    }
    await this.presences.save({ userId, online: false, lastSeenAt: presence.lastSeenAt, offlineSince: new Date(this.clock.now()).toISOString() });
    this.logger.log(`User "${userId}" is offline: no heartbeat since ${presence.lastSeenAt}`);
  }
}
