import { BadRequestException, Body, ForbiddenException, Get, HttpStatus, Inject, NotFoundException, Param, Post, Query, Redirect, Req } from '@nestjs/common';
import { DelayService } from '../delay.service';
import { InvalidPageError } from '../errors/invalid-page.error';
import { UnsupportedOperationError } from '../errors/unsupported-operation.error';
import { DelayClock } from '../time/clock';
import { MAX_PAGE_OFFSET } from '../validation/action-input';
import { deadPage, PageFrame, pendingPage, schedulesPage, TopicHeading, topicsPage } from './admin-pages';
import { AdminPageHeaders } from './admin-headers';
import { noticeText } from './admin-notices';
import { AdminRequest, assertSameOrigin, mountBase } from './admin-request';
import { DELAY_ADMIN_OPTIONS } from './delay-admin.constants';
import { ResolvedDelayAdminOptions } from './delay-admin-options.interface';

/** Fields the page's forms post (application/x-www-form-urlencoded). */
interface AdminForm {
  readonly key?: unknown;
  readonly id?: unknown;
  readonly back?: unknown;
}

interface RedirectTo {
  readonly url: string;
  readonly statusCode: number;
}

/**
 * The admin page's routes. DelayAdminModule.register subclasses it once per
 * mount, adding the path and the app's guards; every page reads one page of
 * actions (list/listDead with an offset), never a whole topic.
 */
export class DelayAdminController {
  constructor(
    private readonly delay: DelayService,
    private readonly clock: DelayClock,
    @Inject(DELAY_ADMIN_OPTIONS) private readonly options: ResolvedDelayAdminOptions,
  ) {}

  @Get()
  @AdminPageHeaders()
  async topics(@Req() request: AdminRequest, @Query('done') done?: string, @Query('n') n?: string): Promise<string> {
    const topics = await this.delay.topics();
    return topicsPage(this.frame(request, done, n), topics.map((topic) => ({ ...topic, recurring: this.delay.isRecurringTopic(topic.topic) })));
  }

  @Get('topics/:topic')
  @AdminPageHeaders()
  async pending(@Req() request: AdminRequest, @Param('topic') topic: string, @Query('page') page?: string, @Query('done') done?: string, @Query('n') n?: string): Promise<string> {
    const number = pageNumber(page);
    const [list, summary] = await Promise.all([this.delay.list(topic, this.pageRequest(number)), this.summary(topic)]);
    return pendingPage(this.frame(request, done, n), topic, summary, list, number);
  }

  @Get('topics/:topic/dead')
  @AdminPageHeaders()
  async dead(@Req() request: AdminRequest, @Param('topic') topic: string, @Query('page') page?: string, @Query('done') done?: string, @Query('n') n?: string): Promise<string> {
    const number = pageNumber(page);
    const [list, summary] = await Promise.all([this.delay.listDead(topic, this.pageRequest(number)), this.summary(topic)]);
    return deadPage(this.frame(request, done, n), topic, summary, list, number);
  }

  /**
   * A recurring topic's schedules, a page at a time by key: `after` is the
   * last key of the page before (none: the first page). The store reads only
   * the page (listRecurringPage), so a topic with many schedules costs no
   * more per view than one with a page of them. A bad `after` is bad input
   * (400, InvalidPageError).
   */
  @Get('topics/:topic/schedules')
  @AdminPageHeaders()
  async schedules(@Req() request: AdminRequest, @Param('topic') topic: string, @Query('after') after?: unknown, @Query('done') done?: string, @Query('n') n?: string): Promise<string> {
    const from = after === undefined || after === '' ? null : after;
    if (from !== null && typeof from !== 'string') throw new InvalidPageError('after must be given once, as a schedule key');
    const [page, summary] = await Promise.all([this.delay.listRecurringPage(topic, { after: from, limit: this.options.pageSize }), this.summary(topic)]);
    return schedulesPage(this.frame(request, done, n), topic, summary, page, from);
  }

  /** Every write: posted by a form, answered with a redirect to the page it came from (post/redirect/get). */
  @Post('topics/:topic/:verb')
  @Redirect()
  async act(@Req() request: AdminRequest, @Param('topic') topic: string, @Param('verb') verb: string, @Body() form: AdminForm | undefined): Promise<RedirectTo> {
    if (!this.options.writable) throw new ForbiddenException('This admin page is read-only (mounted with writable: false).');
    assertSameOrigin(request);
    const base = `${mountBase(request, this.options.path)}/topics/${encodeURIComponent(topic)}`;
    const to = (page: string, code: string, count?: number): RedirectTo => ({
      url: `${page}?done=${code}${count === undefined ? '' : `&n=${count}`}`,
      statusCode: HttpStatus.SEE_OTHER,
    });
    switch (verb) {
      case 'run':
        return to(base, (await this.delay.runNow(topic, field(form, 'key'))) ? 'run' : 'run-missing');
      case 'cancel':
        return to(base, (await this.delay.cancel(topic, field(form, 'key'))) ? 'cancel' : 'cancel-missing');
      case 'redrive':
        return to(`${base}/dead`, (await this.delay.redrive(topic, field(form, 'id'))) ? 'redrive' : 'redrive-missing');
      case 'redrive-all':
        return to(`${base}/dead`, 'redrive-all', await this.delay.redriveAll(topic));
      case 'pause-schedule':
        return to(`${base}/schedules`, (await this.delay.pauseRecurring(topic, field(form, 'key'))) ? 'schedule-pause' : 'schedule-unchanged');
      case 'resume-schedule':
        return to(`${base}/schedules`, (await this.delay.resumeRecurring(topic, field(form, 'key'))) ? 'schedule-resume' : 'schedule-unchanged');
      case 'run-schedule':
        return to(`${base}/schedules`, (await this.delay.runRecurringNow(topic, field(form, 'key'))) ? 'schedule-run' : 'schedule-missing');
      case 'pause':
      case 'resume':
        await (verb === 'pause' ? this.delay.pause(topic) : this.delay.resume(topic));
        return to(form?.back === 'list' ? mountBase(request, this.options.path) : base, verb);
      default:
        throw new NotFoundException(`No admin action "${verb}".`);
    }
  }

  private frame(request: AdminRequest, done: unknown, count: unknown): PageFrame {
    return { base: mountBase(request, this.options.path), options: this.options, now: this.clock.now(), notice: noticeText(done, count) };
  }

  /** The page's offset and limit; a page past the largest offset a listing can read is bad input (400), not a query the store fails on. */
  private pageRequest(number: number): { offset: number; limit: number } {
    const { pageSize } = this.options;
    const offset = (number - 1) * pageSize;
    if (offset > MAX_PAGE_OFFSET) {
      const last = Math.floor(MAX_PAGE_OFFSET / pageSize) + 1;
      throw new InvalidPageError(`page ${number} is past the last page the admin page can show (page ${last}, at ${pageSize} per page)`);
    }
    return { offset, limit: pageSize };
  }

  /**
   * The topic's heading: counts that are one cheap call each on any driver
   * (no listing of every topic), so the page stays fast beside millions of
   * actions. A driver that cannot tell whether a topic is paused says no.
   */
  private async summary(topic: string): Promise<TopicHeading> {
    const [pending, dead, paused] = await Promise.all([
      this.delay.count(topic),
      this.delay.countDead(topic),
      this.delay.isPaused(topic).catch((error: unknown) => {
        if (error instanceof UnsupportedOperationError) return false;
        throw error;
      }),
    ]);
    return { topic, pending, dead, paused, recurring: this.delay.isRecurringTopic(topic) };
  }
}

/** `?page=` as a 1-based page number; anything else is page 1. Bounded so offset stays a safe integer. */
function pageNumber(value: unknown): number {
  const number = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : 1;
  return Math.max(1, number);
}

function field(form: AdminForm | undefined, name: 'key' | 'id'): string {
  const value = form?.[name];
  if (typeof value !== 'string' || value === '') throw new BadRequestException(`The form must post a non-empty "${name}".`);
  return value;
}
