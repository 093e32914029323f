import { Controller, Get, HttpCode, HttpStatus, Param, Post } from '@nestjs/common';
import { UserParams } from './dto/user-params.dto';
import { PresenceService } from './presence.service';
import { UserPresence } from './user-presence';

@Controller('presence')
export class PresenceController {
  constructor(private readonly presence: PresenceService) {}

  @Get()
  list(): Promise<UserPresence[]> {
    return this.presence.list();
  }

  @Get(':userId')
  get(@Param() { userId }: UserParams): Promise<UserPresence> {
    return this.presence.get(userId);
  }

  @Post(':userId/heartbeat')
  @HttpCode(HttpStatus.OK)
  heartbeat(@Param() { userId }: UserParams): Promise<UserPresence> {
    return this.presence.heartbeat(userId);
  }
}
