/** A database URL fit for a log line or an error message: user, host, port and database, never the password. */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username === '' ? '' : `${decodeURIComponent(parsed.username)}@`;
    return `postgres://${user}${parsed.host || 'localhost'}${parsed.pathname}`;
  } catch {
    return 'an unreadable URL';
  }
}
