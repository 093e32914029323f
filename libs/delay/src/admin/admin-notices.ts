/**
 * What the page says after an action. The redirect names a notice by code,
 * never by text, so a crafted link cannot put words of its choosing on the page.
 */
const NOTICES: Readonly<Record<string, (count: number) => string>> = {
  run: () => 'The action is due now; a consumer picks it up shortly.',
  'run-missing': () => 'That action is no longer waiting (it ran, was cancelled or is running).',
  cancel: () => 'The action is cancelled.',
  'cancel-missing': () => 'That action is no longer pending.',
  redrive: () => 'The dead action is due again, now.',
  'redrive-missing': () => 'That dead action is gone (re-driven already?).',
  'redrive-all': (count) => `${count} dead action(s) are due again, now.`,
  pause: () => 'The topic is paused: nothing new starts until it is resumed.',
  resume: () => 'The topic is resumed.',
  'schedule-pause': () => 'The schedule is paused: none of its occurrences fires until it is resumed.',
  'schedule-resume': () => 'The schedule is resumed; its missed-run policy decides what runs of the time it was paused.',
  'schedule-unchanged': () => 'Nothing changed: that schedule is gone, or already so.',
  'schedule-run': () => 'One extra occurrence is due now; the schedule keeps its times.',
  'schedule-missing': () => 'That schedule is gone.',
};

export function noticeText(code: unknown, count: unknown): string | undefined {
  if (typeof code !== 'string' || !Object.prototype.hasOwnProperty.call(NOTICES, code)) return undefined;
  const n = typeof count === 'string' && /^\d{1,9}$/.test(count) ? Number(count) : 0;
  return (NOTICES[code] as (count: number) => string)(n);
}
