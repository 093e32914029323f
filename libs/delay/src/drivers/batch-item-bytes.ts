/**
 * What one collected item counts for against maxBatchBytes: its JSON in
 * UTF-8 bytes plus its framing as the Redis driver stores it (the decimal
 * length and a colon), so both drivers count a batch alike.
 */
export function batchItemBytes(json: string): number {
  const bytes = Buffer.byteLength(json, 'utf8');
  return bytes + String(bytes).length + 1;
}
