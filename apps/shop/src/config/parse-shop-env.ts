import { isIP } from 'node:net';
import { parseDuration } from 'nestjs-delay';
import { InvalidEnvironmentError } from './invalid-environment.error';
import { AllowedNetwork, DELAY_DRIVER_KINDS, DelayDriverKind, ShopConfig } from './shop-config.interface';

type Env = Readonly<Record<string, string | undefined>>;

/** The delay driver when neither DELAY_DRIVER nor REDIS_URL says otherwise. */
const DEFAULT_DELAY_DRIVER: DelayDriverKind = 'postgres';

export const SHOP_ENV_DEFAULTS = {
  PORT: '3000',
  UNPAID_TIMEOUT: '30m',
  AUTO_RATE_AFTER: '48h',
  OFFLINE_AFTER: '30s',
  WEBHOOK_WINDOW: '3s',
  WEBHOOK_MAX_BATCH: '100',
  // How long a claimed action belongs to an instance (Redis and postgres drivers): a crashed instance's actions run
  // again this long after their claim, on another instance or after the restart.
  DELAY_LEASE: '30s',
} as const;

/**
 * Reads the shop's variables, applying defaults. Collects every problem
 * before throwing, and names the variable and an example of a good value
 * in each, because this message is the first thing a newcomer sees.
 */
export function parseShopEnv(env: Env): ShopConfig {
  const problems: string[] = [];
  const config: ShopConfig = {
    port: integer(env, 'PORT', 0, 65_535, problems),
    databaseUrl: databaseUrl(env, problems),
    delayDriver: delayDriver(env, problems),
    redisUrl: redisUrl(env, problems),
    redisPrefix: redisPrefix(env, problems),
    adminToken: adminToken(env, problems),
    unpaidTimeoutMs: duration(env, 'UNPAID_TIMEOUT', problems),
    autoRateAfterMs: duration(env, 'AUTO_RATE_AFTER', problems),
    offlineAfterMs: duration(env, 'OFFLINE_AFTER', problems),
    webhookWindowMs: duration(env, 'WEBHOOK_WINDOW', problems),
    delayLeaseMs: duration(env, 'DELAY_LEASE', problems),
    // 1000 is the delay module's default maxBatchItems, which collect refuses to exceed.
    webhookMaxBatch: integer(env, 'WEBHOOK_MAX_BATCH', 1, 1_000, problems),
    webhookAllowedNetworks: allowedNetworks(env, problems),
  };
  if (problems.length > 0) throw new InvalidEnvironmentError(problems);
  return config;
}

function raw(env: Env, name: keyof typeof SHOP_ENV_DEFAULTS): string {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? SHOP_ENV_DEFAULTS[name] : value;
}

function duration(env: Env, name: keyof typeof SHOP_ENV_DEFAULTS, problems: string[]): number {
  const value = raw(env, name);
  let ms: number;
  try {
    ms = parseDuration(value);
  } catch {
    problems.push(`${name}=${JSON.stringify(value)} is not a duration; use e.g. "500ms", "10s", "30m", "48h" or "1h30m" (default ${SHOP_ENV_DEFAULTS[name]})`);
    return 0;
  }
  if (ms === 0) problems.push(`${name} must be longer than zero (default ${SHOP_ENV_DEFAULTS[name]})`);
  return ms;
}

function integer(env: Env, name: keyof typeof SHOP_ENV_DEFAULTS, min: number, max: number, problems: string[]): number {
  const value = raw(env, name);
  const parsed = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
    problems.push(`${name}=${JSON.stringify(value)} must be a whole number from ${min} to ${max} (default ${SHOP_ENV_DEFAULTS[name]})`);
    return min;
  }
  return parsed;
}

/** The URL's scheme with its colon ('redis:'), or undefined when `value` is no URL. */
function protocolOf(value: string): string | undefined {
  try {
    return new URL(value).protocol;
  } catch {
    return undefined;
  }
}

function redisUrl(env: Env, problems: string[]): string | undefined {
  const value = env.REDIS_URL?.trim();
  if (value === undefined || value === '') return undefined;
  const protocol = protocolOf(value);
  if (protocol !== 'redis:' && protocol !== 'rediss:') {
    problems.push(`REDIS_URL=${JSON.stringify(value)} must be a redis:// or rediss:// URL, e.g. redis://localhost:6379 (unset it to keep pending actions in the shop's database)`);
    return undefined;
  }
  return value;
}

function databaseUrl(env: Env, problems: string[]): string | undefined {
  const value = env.DATABASE_URL?.trim();
  if (value === undefined || value === '') return undefined;
  const protocol = protocolOf(value);
  if (protocol !== 'postgres:' && protocol !== 'postgresql:') {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL, e.g. postgres://shop:secret@localhost:5432/shop (unset it to use the embedded PostgreSQL)');
    return undefined;
  }
  return value;
}

/**
 * DELAY_DRIVER: where pending actions live. Unset: Redis when REDIS_URL is
 * set, else the shop's own PostgreSQL database, where scheduling joins the
 * transaction of the change that arms it.
 */
function delayDriver(env: Env, problems: string[]): DelayDriverKind {
  const value = env.DELAY_DRIVER?.trim();
  const hasRedis = (env.REDIS_URL?.trim() ?? '') !== '';
  if (value === undefined || value === '') return hasRedis ? 'redis' : DEFAULT_DELAY_DRIVER;
  if (!(DELAY_DRIVER_KINDS as readonly string[]).includes(value)) {
    problems.push(`DELAY_DRIVER=${JSON.stringify(value)} must be one of ${DELAY_DRIVER_KINDS.join(', ')} (unset it for ${DEFAULT_DELAY_DRIVER}, or redis when REDIS_URL is set)`);
    return DEFAULT_DELAY_DRIVER;
  }
  if (value === 'redis' && !hasRedis) problems.push('DELAY_DRIVER=redis needs REDIS_URL, e.g. redis://localhost:6379');
  return value as DelayDriverKind;
}

/** The same rule the delay module applies to its `prefix` option, checked here so a bad value is listed with the others. */
function redisPrefix(env: Env, problems: string[]): string | undefined {
  const value = env.REDIS_PREFIX?.trim();
  if (value === undefined || value === '') return undefined;
  if (!/^[A-Za-z0-9._:-]{1,64}$/.test(value)) {
    problems.push(`REDIS_PREFIX=${JSON.stringify(value)} must be 1 to 64 letters, digits, ".", "_", ":" or "-", e.g. shop (unset it for the default, delay)`);
    return undefined;
  }
  return value;
}

/** Long enough that guessing it is not a pastime; trimmed, so a stray newline from a secrets file does not count. */
function adminToken(env: Env, problems: string[]): string | undefined {
  const value = env.ADMIN_TOKEN?.trim();
  if (value === undefined || value === '') return undefined;
  if (value.length < 12) problems.push('ADMIN_TOKEN must be at least 12 characters (unset it to keep the admin page read-only)');
  return value;
}

/**
 * WEBHOOK_ALLOWED_NETWORKS: the loopback, private or other special-purpose
 * networks a webhook may reach after all, as comma-separated CIDRs or
 * addresses, e.g. "127.0.0.1/32,::1/128" for a receiver on this machine.
 * Unset (the default): webhooks reach public addresses only.
 */
function allowedNetworks(env: Env, problems: string[]): AllowedNetwork[] {
  const value = env.WEBHOOK_ALLOWED_NETWORKS?.trim();
  if (value === undefined || value === '') return [];
  const networks: AllowedNetwork[] = [];
  for (const entry of value.split(',').map((part) => part.trim())) {
    const [address = '', prefixText, ...rest] = entry.split('/');
    const family = isIP(address);
    const maxPrefix = family === 6 ? 128 : 32;
    const prefix = prefixText === undefined ? maxPrefix : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (family === 0 || rest.length > 0 || !(prefix >= 0 && prefix <= maxPrefix)) {
      problems.push(`WEBHOOK_ALLOWED_NETWORKS has ${JSON.stringify(entry)}: use comma-separated addresses or CIDRs, e.g. 127.0.0.1/32,::1/128 (unset it to allow public addresses only)`);
      continue;
    }
    networks.push({ address, prefix, family: family === 6 ? 'ipv6' : 'ipv4' });
  }
  return networks;
}
