import { AdminGuardRequiredError } from '../errors/admin-guard-required.error';
import { InvalidAdminOptionsError } from '../errors/invalid-admin-options.error';
import { DelayAdminOptions, ResolvedDelayAdminOptions } from './delay-admin-options.interface';

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 500;

/** Checks register()'s options, collecting every problem; refuses writes without a guard. */
export function resolveAdminOptions(options: DelayAdminOptions): ResolvedDelayAdminOptions {
  const problems: string[] = [];
  if (typeof options !== 'object' || options === null) throw new InvalidAdminOptionsError(["options are required, e.g. { path: 'admin/delays' }"]);
  const path = typeof options.path === 'string' ? options.path.replace(/^\/+|\/+$/g, '') : '';
  if (typeof options.path !== 'string' || !/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(path)) {
    problems.push(`path must be one or more URL segments of [A-Za-z0-9._~-] separated by "/", e.g. 'admin/delays', got ${JSON.stringify(options.path)}`);
  }
  if (options.writable !== undefined && typeof options.writable !== 'boolean') problems.push(`writable must be true or false, got ${String(options.writable)}`);
  const guards = options.guards ?? [];
  if (!Array.isArray(guards) || guards.some((guard) => typeof guard !== 'function' && (typeof guard !== 'object' || guard === null || typeof guard.canActivate !== 'function'))) {
    problems.push('guards must be an array of guard classes or instances (objects with canActivate)');
  }
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) problems.push(`pageSize must be a whole number from 1 to ${MAX_PAGE_SIZE}, got ${String(options.pageSize)}`);
  const title = options.title ?? 'Delayed actions';
  if (typeof title !== 'string' || title.trim() === '') problems.push('title must be a non-empty string');
  if (problems.length > 0) throw new InvalidAdminOptionsError(problems);
  const writable = options.writable ?? false;
  if (writable && guards.length === 0) throw new AdminGuardRequiredError(path);
  return { path, writable, pageSize, title };
}
