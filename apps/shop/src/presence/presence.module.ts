import { Module } from '@nestjs/common';
import { PresenceController } from './presence.controller';
import { PresenceRepository } from './presence.repository';
import { PresenceService } from './presence.service';
import { UserOfflineHandler } from './user-offline.handler';

@Module({
  controllers: [PresenceController],
  providers: [PresenceRepository, PresenceService, UserOfflineHandler],
})
export class PresenceModule {}
