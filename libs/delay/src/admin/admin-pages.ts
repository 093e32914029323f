import { DelayService } from '../delay.service';
import { DeadAction, Page, PendingAction } from '../interfaces/pending-action.interface';
import { SERIES_SEPARATOR } from '../recurring/occurrence-key';
import { RecurringRun, RecurringSchedule } from '../recurring/recurring-options';
import { RecurringPage } from '../recurring/recurring-page';
import { ADMIN_STYLESHEET } from './admin-stylesheet';
import { ResolvedDelayAdminOptions } from './delay-admin-options.interface';
import { html, SafeHtml } from './html';

/** One topic as DelayService.topics() reports it, and whether this application handles it as recurring. */
type TopicSummary = Awaited<ReturnType<DelayService['topics']>>[number] & { readonly recurring: boolean };

/** What a topic's own pages show above its list. */
export interface TopicHeading {
  readonly topic: string;
  /** Waiting and running together. */
  readonly pending: number;
  readonly dead: number;
  readonly paused: boolean;
  /** Handled here by @Recurring or @OnRecurring: its page links to its schedules. */
  readonly recurring: boolean;
}

/** What every page needs: where the admin is mounted, its options, and the time "now" on the delay clock. */
export interface PageFrame {
  readonly base: string;
  readonly options: ResolvedDelayAdminOptions;
  readonly now: number;
  /** A short report of the last action, shown once after a redirect. */
  readonly notice?: string;
}

/** Longest payload or error shown in a table cell; the rest sits behind "more". */
const PREVIEW_CHARS = 160;
/** Longest text put on the page at all: a payload can be 64 KiB, a page of 50 of them should not be 3 MiB. */
const MAX_CHARS = 4_000;

export function topicsPage(frame: PageFrame, topics: readonly TopicSummary[]): string {
  const rows = topics.map(
    (topic) => html`<tr>
      <td data-label="Topic"><a href="${topicHref(frame, topic.topic)}"><code>${topic.topic}</code></a> ${topic.paused ? html`<span class="badge paused">paused</span>` : ''}${topic.recurring ? html` <a class="badge recurring" href="${topicHref(frame, topic.topic)}/schedules">recurring</a>` : ''}</td>
      <td data-label="Waiting" class="num">${formatCount(topic.waiting)}</td>
      <td data-label="Running" class="num">${formatCount(topic.running)}</td>
      <td data-label="Dead" class="num">${topic.dead > 0 ? html`<a href="${topicHref(frame, topic.topic)}/dead">${formatCount(topic.dead)}</a>` : '0'}</td>
      <td data-label="Actions">${pauseForm(frame, topic, 'list')}</td>
    </tr>`,
  );
  const body = html`<h1>${frame.options.title}</h1>
    <p class="muted">Topics with waiting, running or dead actions. ${frame.options.writable ? '' : 'Read-only.'}</p>
    ${
      topics.length === 0
        ? html`<p>No topic has pending or dead actions.</p>`
        : html`<table><thead><tr><th>Topic</th><th class="num">Waiting</th><th class="num">Running</th><th class="num">Dead</th><th>Actions</th></tr></thead><tbody>${rows}</tbody></table>`
    }`;
  return layout(frame, frame.options.title, [], body);
}

export function pendingPage(frame: PageFrame, topic: string, summary: TopicHeading, page: Page<PendingAction>, pageNumber: number): string {
  const rows = page.items.map(
    (action) => html`<tr>
      <td data-label="Key"><code>${clip(action.key, MAX_CHARS)}</code> ${action.state === 'running' ? html`<span class="badge running">running</span>` : ''}</td>
      <td data-label="Due">${dueCell(frame, action.dueAt)}</td>
      <td data-label="Attempt" class="num">${action.attempt}</td>
      <td data-label="Payload">${payloadCell(action.items ?? action.payload)}</td>
      <td data-label="Actions">${
        // On a recurring topic a key without U+001E is a schedule's tick: it is managed on the schedules page
        // (cancel, reschedule and runNow refuse it), its occurrences here.
        summary.recurring && !action.key.includes(SERIES_SEPARATOR)
          ? html`<a href="${topicHref(frame, topic)}/schedules">schedule</a>`
          : frame.options.writable
            ? html`${action.state === 'waiting' ? actionForm(frame, topic, 'run', 'key', action.key, 'Run now') : ''}${actionForm(frame, topic, 'cancel', 'key', action.key, 'Cancel', true)}`
            : ''
      }</td>
    </tr>`,
  );
  const body = html`<h1><code>${topic}</code> ${summary.paused ? html`<span class="badge paused">paused</span>` : ''}</h1>
    ${summaryLine(frame, topic, summary)}
    <h2>Pending</h2>
    ${pager(frame, page, pageNumber, topicHref(frame, topic))}
    ${
      page.items.length === 0
        ? html`<p>Nothing pending${page.offset > 0 ? ' on this page' : ''}.</p>`
        : html`<table><thead><tr><th>Key</th><th>Due</th><th class="num">Attempt</th><th>Payload</th><th>Actions</th></tr></thead><tbody>${rows}</tbody></table>`
    }`;
  return layout(frame, `${topic} · ${frame.options.title}`, [{ label: topic }], body);
}

export function deadPage(frame: PageFrame, topic: string, summary: TopicHeading, page: Page<DeadAction>, pageNumber: number): string {
  const rows = page.items.map(
    (action) => html`<tr>
      <td data-label="Key"><code>${clip(action.key, MAX_CHARS)}</code></td>
      <td data-label="Error" class="error">${textCell(action.error)}</td>
      <td data-label="Attempts" class="num">${action.attempts}</td>
      <td data-label="Died">${timeCell(frame, action.diedAt)}</td>
      <td data-label="Payload">${payloadCell(action.items ?? action.payload)}</td>
      <td data-label="Actions">${frame.options.writable ? actionForm(frame, topic, 'redrive', 'id', action.id, 'Redrive') : ''}</td>
    </tr>`,
  );
  const redriveAll =
    frame.options.writable && page.total > 0
      ? html`<form class="inline" method="post" action="${topicHref(frame, topic)}/redrive-all"><button type="submit">Redrive all ${formatCount(page.total)}</button></form>`
      : '';
  const body = html`<h1><code>${topic}</code>: dead actions</h1>
    ${summaryLine(frame, topic, summary)}
    <div class="pager">${redriveAll}</div>
    ${pager(frame, page, pageNumber, `${topicHref(frame, topic)}/dead`)}
    ${
      page.items.length === 0
        ? html`<p>No dead actions${page.offset > 0 ? ' on this page' : ''}.</p>`
        : html`<table><thead><tr><th>Key</th><th>Error</th><th class="num">Attempts</th><th>Died</th><th>Payload</th><th>Actions</th></tr></thead><tbody>${rows}</tbody></table>`
    }`;
  return layout(frame, `${topic} dead · ${frame.options.title}`, [{ label: topic, href: topicHref(frame, topic) }, { label: 'dead' }], body);
}

export function schedulesPage(frame: PageFrame, topic: string, summary: TopicHeading, page: RecurringPage, after: string | null): string {
  const rows = page.schedules.map(
    (schedule) => html`<tr>
      <td data-label="Key"><code>${clip(schedule.key, MAX_CHARS)}</code> ${schedule.paused ? html`<span class="badge paused">paused</span>` : ''}</td>
      <td data-label="Recurrence">${recurrenceCell(schedule.recurrence)}</td>
      <td data-label="Next run">${schedule.nextRunAt ? dueCell(frame, schedule.nextRunAt) : html`<span class="muted">${schedule.paused ? 'paused' : 'none'}</span>`}</td>
      <td data-label="Last run">${lastRunCell(frame, schedule.lastRun)}</td>
      <td data-label="Declared">${schedule.declared ? html`in code <span class="muted">(orphan: ${schedule.orphan ?? 'remove'})</span>` : 'per key'}</td>
      <td data-label="Actions">${
        frame.options.writable
          ? html`${
              schedule.paused
                ? actionForm(frame, topic, 'resume-schedule', 'key', schedule.key, 'Resume')
                : actionForm(frame, topic, 'pause-schedule', 'key', schedule.key, 'Pause')
            }${actionForm(frame, topic, 'run-schedule', 'key', schedule.key, 'Run now')}`
          : ''
      }</td>
    </tr>`,
  );
  const body = html`<h1><code>${topic}</code>: recurring schedules</h1>
    ${summaryLine(frame, topic, summary)}
    ${keyPager(page, after, `${topicHref(frame, topic)}/schedules`)}
    ${
      page.schedules.length === 0
        ? html`<p>No schedules${after !== null ? ' after this key' : ''}.</p>`
        : html`<table><thead><tr><th>Key</th><th>Recurrence</th><th>Next run</th><th>Last run</th><th>Declared</th><th>Actions</th></tr></thead><tbody>${rows}</tbody></table>`
    }`;
  return layout(frame, `${topic} schedules · ${frame.options.title}`, [{ label: topic, href: topicHref(frame, topic) }, { label: 'schedules' }], body);
}

export function errorPage(frame: PageFrame, status: number, message: string): string {
  const body = html`<h1>${status === 403 ? 'Not allowed' : status === 404 ? 'Not found' : status < 500 ? 'Cannot do that' : 'Something went wrong'}</h1>
    <div class="problem">${message}</div>
    <p><a href="${frame.base}">Back to the topics</a></p>`;
  return layout(frame, `${status} · ${frame.options.title}`, [], body);
}

function layout(frame: PageFrame, title: string, crumbs: ReadonlyArray<{ label: string; href?: string }>, body: SafeHtml): string {
  const trail = crumbs.map((crumb) => html` / ${crumb.href ? html`<a href="${crumb.href}">${crumb.label}</a>` : crumb.label}`);
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex"><title>${title}</title><style>${ADMIN_STYLESHEET}</style></head>
<body><header><nav class="crumbs"><a href="${frame.base}">${frame.options.title}</a>${trail}</nav></header>
<main>${frame.notice ? html`<div class="notice" role="status">${frame.notice}</div>` : ''}${body}</main></body></html>`.text;
}

function summaryLine(frame: PageFrame, topic: string, summary: TopicHeading): SafeHtml {
  return html`<p class="pager"><a href="${topicHref(frame, topic)}">${formatCount(summary.pending)} pending</a>
    <a href="${topicHref(frame, topic)}/dead">${formatCount(summary.dead)} dead</a>${summary.recurring ? html`
    <a href="${topicHref(frame, topic)}/schedules">schedules</a>` : ''}${pauseForm(frame, summary)}</p>`;
}

function pauseForm(frame: PageFrame, topic: { readonly topic: string; readonly paused: boolean }, back: 'list' | 'topic' = 'topic'): SafeHtml | string {
  if (!frame.options.writable) return '';
  const verb = topic.paused ? 'resume' : 'pause';
  return html`<form class="inline" method="post" action="${topicHref(frame, topic.topic)}/${verb}"><input type="hidden" name="back" value="${back}"><button type="submit">${topic.paused ? 'Resume' : 'Pause'}</button></form>`;
}

function actionForm(frame: PageFrame, topic: string, verb: string, field: string, value: string, label: string, danger = false): SafeHtml {
  return html`<form class="inline" method="post" action="${topicHref(frame, topic)}/${verb}"><input type="hidden" name="${field}" value="${value}"><button type="submit"${danger ? html` class="danger"` : ''}>${label}</button></form> `;
}

function pager<T>(frame: PageFrame, page: Page<T>, pageNumber: number, href: string): SafeHtml {
  const pages = Math.max(1, Math.ceil(page.total / page.limit));
  const first = page.total === 0 ? 0 : page.offset + 1;
  const last = page.offset + page.items.length;
  return html`<div class="pager">
    <span>${formatCount(first)}–${formatCount(last)} of ${formatCount(page.total)}</span>
    ${pageNumber > 1 ? html`<a href="${href}?page=${pageNumber - 1}">← previous</a>` : ''}
    ${pageNumber < pages ? html`<a href="${href}?page=${pageNumber + 1}">next →</a>` : ''}
    ${pages > 2 ? html`<form method="get" action="${href}"><label>page <input name="page" type="number" min="1" max="${pages}" value="${pageNumber}" style="width:6rem"></label> of ${formatCount(pages)} <button type="submit">Go</button></form>` : ''}
  </div>`;
}

/** A page of schedules by key: how many, from where, and links to the first page and the next one (no total: it would cost a count of every schedule). */
function keyPager(page: RecurringPage, after: string | null, href: string): SafeHtml {
  const count = page.schedules.length;
  return html`<div class="pager">
    <span>${formatCount(count)} schedule${count === 1 ? '' : 's'} ${after === null ? 'from the first' : html`after <code>${clip(after, MAX_CHARS)}</code>`}</span>
    ${after !== null ? html`<a href="${href}">← first</a>` : ''}
    ${page.next !== null ? html`<a href="${href}?after=${encodeURIComponent(page.next)}">next →</a>` : ''}
  </div>`;
}

function topicHref(frame: PageFrame, topic: string): string {
  return `${frame.base}/topics/${encodeURIComponent(topic)}`;
}

function dueCell(frame: PageFrame, at: Date): SafeHtml {
  return html`<span title="${at.toISOString()}">${relative(at.getTime() - frame.now)}</span><br><span class="muted">${at.toISOString()}</span>`;
}

function timeCell(frame: PageFrame, at: Date): SafeHtml {
  return html`<span title="${at.toISOString()}">${relative(at.getTime() - frame.now)}</span>`;
}

/** The recurrence as written: the cron and its zone, or the interval and its anchor. */
function recurrenceCell(recurrence: RecurringSchedule['recurrence']): SafeHtml {
  if ('cron' in recurrence) {
    return html`<code>${recurrence.cron}</code> <span class="muted">${recurrence.timeZone ?? 'UTC'}</span>`;
  }
  const every = typeof recurrence.every === 'number' ? exactSpan(recurrence.every) : recurrence.every;
  const anchor = recurrence.anchor === undefined || new Date(recurrence.anchor).getTime() === 0 ? '' : html` <span class="muted">from ${new Date(recurrence.anchor).toISOString()}</span>`;
  return html`every <code>${every}</code>${anchor}`;
}

/** The latest occurrence to finish: when it was set for, how it ended, how late it started. */
function lastRunCell(frame: PageFrame, run: RecurringRun | null): SafeHtml {
  if (!run) return html`<span class="muted">none yet</span>`;
  const blocked = run.blockedBy ? `, ${run.blockedBy.occurrence.slice(run.blockedBy.occurrence.indexOf('\u001e') + 1)} still ${run.blockedBy.state} (due since ${run.blockedBy.dueAt.toISOString()}${run.blockedBy.attempt > 1 ? `, attempt ${run.blockedBy.attempt}` : ''})` : '';
  return html`${timeCell(frame, run.scheduledAt)} <span class="badge ${run.outcome}">${run.outcome}</span><br><span class="muted">${run.scheduledAt.toISOString()}${run.lagMs === null ? '' : `, started ${span(run.lagMs)} late`}${blocked}</span>`;
}

function payloadCell(value: unknown): SafeHtml | string {
  if (value === undefined) return html`<span class="muted">none</span>`;
  return textCell(JSON.stringify(value) ?? String(value));
}

/** Short text inline; long text as a preview that opens to the rest (up to MAX_CHARS). */
function textCell(text: string): SafeHtml {
  if (text.length <= PREVIEW_CHARS) return html`<code>${text}</code>`;
  return html`<details><summary><code>${text.slice(0, PREVIEW_CHARS)}…</code></summary><pre>${clip(text, MAX_CHARS)}</pre></details>`;
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${formatCount(text.length - max)} more characters)`;
}

/** "in 29m 58s", "3s ago": what an operator reads first; the exact time sits beside it. */
export function relative(deltaMs: number): string {
  const abs = Math.abs(deltaMs);
  if (abs < 1_000) return deltaMs >= 0 ? 'now' : 'just now';
  const text = span(abs);
  return deltaMs >= 0 ? `in ${text}` : `${text} ago`;
}

/** A length of time to the millisecond, in every unit it needs ("1d 5m", "1500ms"): an interval as it was set. */
function exactSpan(ms: number): string {
  if (ms % 1_000 !== 0) return `${ms}ms`;
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of units) {
    if (rest >= size) parts.push(`${Math.floor(rest / size)}${unit}`);
    rest %= size;
  }
  return parts.join(' ') || '0s';
}

/** A length of time in its two largest units ("29m 58s", "1d 2h"); below a second, in ms. */
function span(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1_000) return `${Math.round(abs)}ms`;
  const units: Array<[string, number]> = [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1_000]];
  const parts: string[] = [];
  let rest = abs;
  for (const [unit, size] of units) {
    if (rest >= size && parts.length < 2) {
      parts.push(`${Math.floor(rest / size)}${unit}`);
      rest %= size;
    } else if (parts.length > 0) break;
  }
  return parts.join(' ');
}

function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}
