import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** SHA-256 of a secret: what the shop keeps of a token it issued, and what it compares. */
export function secretDigest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

/** Compares digests, so the time taken says nothing about how much of the secret was right. */
export function sameSecret(given: string, expected: string | Buffer): boolean {
  return timingSafeEqual(secretDigest(given), typeof expected === 'string' ? secretDigest(expected) : expected);
}

/** A new random token: 32 bytes, URL-safe base64. */
export function newToken(): string {
  return randomBytes(32).toString('base64url');
}

/** The token of an `Authorization: Bearer <token>` header, or undefined when there is none. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value === undefined ? null : /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(value);
  return match ? match[1] : undefined;
}
