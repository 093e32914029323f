import { Controller, Get, HttpCode, HttpStatus, Param, Post, Query, UseGuards } from '@nestjs/common';
import { DeadAction, Page, PendingAction, TopicSummary } from 'nestjs-delay';
import { AdminApiGuard } from './admin-api.guard';
import { DelaysAdminService } from './delays-admin.service';
import { DeadActionParams } from './dto/dead-action-params.dto';
import { PageQuery } from './dto/page.query';
import { TopicParams } from './dto/topic-params.dto';
import { RedriveResult } from './redrive-result';

/**
 * The JSON side of the delay admin, for scripts (people use the page at
 * /admin/delays). Every route needs the ADMIN_TOKEN as a bearer token.
 */
@Controller('api/admin/delays')
@UseGuards(AdminApiGuard)
export class AdminController {
  constructor(private readonly admin: DelaysAdminService) {}

  @Get()
  summary(): Promise<TopicSummary[]> {
    return this.admin.summary();
  }

  @Get(':topic')
  pending(@Param() { topic }: TopicParams, @Query() page: PageQuery): Promise<Page<PendingAction>> {
    return this.admin.pending(topic, page);
  }

  @Get(':topic/dead')
  dead(@Param() { topic }: TopicParams, @Query() page: PageQuery): Promise<Page<DeadAction>> {
    return this.admin.dead(topic, page);
  }

  @Post(':topic/dead/redrive')
  @HttpCode(HttpStatus.OK)
  redriveAll(@Param() { topic }: TopicParams): Promise<RedriveResult> {
    return this.admin.redriveAll(topic);
  }

  @Post(':topic/dead/:id/redrive')
  @HttpCode(HttpStatus.OK)
  redrive(@Param() { topic, id }: DeadActionParams): Promise<RedriveResult> {
    return this.admin.redrive(topic, id);
  }
}
