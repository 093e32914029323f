import { TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Injectable } from '@nestjs/common';
import { EntityManager } from 'typeorm';
import { UserPresence } from './user-presence';
import { UserPresenceEntity } from './user-presence.entity';

/** The presence of every user ever seen, in `user_presence`. */
@Injectable()
export class PresenceRepository {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  private get manager(): EntityManager {
    return this.txHost.tx;
  }

  async findByUserId(userId: string): Promise<UserPresence | undefined> {
    const row = await this.manager.findOneBy(UserPresenceEntity, { userId });
    return row ? toPresence(row) : undefined;
  }

  /** The user's presence, its row locked until the transaction ends, so a heartbeat and the offline action take turns. */
  async findByUserIdForUpdate(userId: string): Promise<UserPresence | undefined> {
    const row = await this.manager.findOne(UserPresenceEntity, { where: { userId }, lock: { mode: 'pessimistic_write' } });
    return row ? toPresence(row) : undefined;
  }

  async findAll(): Promise<UserPresence[]> {
    return (await this.manager.find(UserPresenceEntity, { order: { userId: 'ASC' } })).map(toPresence);
  }

  async save(presence: UserPresence): Promise<void> {
    await this.manager.upsert(
      UserPresenceEntity,
      {
        userId: presence.userId,
        online: presence.online,
        lastSeenAt: new Date(presence.lastSeenAt),
        offlineDueAt: presence.offlineDueAt === undefined ? null : new Date(presence.offlineDueAt),
        offlineSince: presence.offlineSince === undefined ? null : new Date(presence.offlineSince),
      },
      ['userId'],
    );
  }
}

function toPresence(row: UserPresenceEntity): UserPresence {
  return {
    userId: row.userId,
    online: row.online,
    lastSeenAt: row.lastSeenAt.toISOString(),
    ...(row.offlineDueAt ? { offlineDueAt: row.offlineDueAt.toISOString() } : {}),
    ...(row.offlineSince ? { offlineSince: row.offlineSince.toISOString() } : {}),
  };
}
