import { PayloadNotSerializableError } from '../errors/payload-not-serializable.error';
import { PayloadTooLargeError } from '../errors/payload-too-large.error';

/**
 * What JSON does to a payload, found by one walk of plain data:
 * - KEPT: JSON.parse(JSON.stringify(payload)) equals the payload, type for
 *   type (plain objects and arrays, strings, finite numbers other than -0,
 *   booleans, null): the payload itself can stand for what was stored.
 * - PLAIN: nothing JSON would drop silently (no function, symbol or toJSON),
 *   but JSON changes it (an undefined left out, NaN written as null, a hole,
 *   an object without a prototype): it is written without checks, and read
 *   back from its JSON.
 * - OTHER: not plain data, or too deep to walk: JSON.stringify's replacer
 *   decides (it refuses a nested function or symbol, and reports a cycle).
 */
export enum PayloadShape {
  Other = 0,
  Plain = 1,
  Kept = 2,
}

/** Deeper than this, the walk gives up and leaves it to the replacer (which also reports cycles). */
const MAX_WALK_DEPTH = 32;

export function payloadShape(payload: unknown): PayloadShape {
  return shapeOf(payload, 0);
}

function shapeOf(value: unknown, depth: number): PayloadShape {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return PayloadShape.Kept;
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0) ? PayloadShape.Kept : PayloadShape.Plain;
    case 'undefined':
      // Left out of an object, null in an array.
      return PayloadShape.Plain;
    case 'object':
      if (value === null) return PayloadShape.Kept;
      return depth < MAX_WALK_DEPTH ? shapeOfObject(value, depth + 1) : PayloadShape.Other;
    default:
      // function, symbol, bigint
      return PayloadShape.Other;
  }
}

function shapeOfObject(value: object, depth: number): PayloadShape {
  let shape: PayloadShape = PayloadShape.Kept;
  if (Array.isArray(value)) {
    for (let n = 0; n < value.length && shape !== PayloadShape.Other; n++) shape = Math.min(shape, shapeOf(value[n] as unknown, depth)) as PayloadShape;
    return shape;
  }
  const prototype = Object.getPrototypeOf(value) as unknown;
  if (prototype !== Object.prototype) {
    if (prototype !== null) return PayloadShape.Other;
    shape = PayloadShape.Plain;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return PayloadShape.Other;
  for (const name in value) {
    shape = Math.min(shape, shapeOf((value as Record<string, unknown>)[name], depth)) as PayloadShape;
    if (shape === PayloadShape.Other) break;
  }
  return shape;
}

/**
 * JSON text of the payload (undefined for none), refused when JSON would
 * lose or choke on it. JSON.stringify silently drops a function or symbol
 * (or writes null for one in an array): those are refused wherever they sit.
 * An `undefined` property is left out, as JSON does, on every driver.
 * `shape` is payloadShape(payload), when the caller has it already.
 */
export function serializePayload(payload: unknown, maxBytes: number, shape?: PayloadShape): string | undefined {
  switch (typeof payload) {
    case 'undefined':
      return undefined;
    case 'string':
      // Strings are the common payload: no replacer, and the byte count is skipped when it cannot exceed the limit.
      return checkSize(JSON.stringify(payload), maxBytes);
    case 'number':
    case 'boolean':
      return JSON.stringify(payload);
    case 'function':
    case 'symbol':
      throw new PayloadNotSerializableError(`a ${typeof payload} has no JSON form`);
  }
  let json: string | undefined;
  try {
    // A replacer makes JSON.stringify call back into JS for every value (about twice the
    // cost for a typical payload): plain data, found so by the walk, goes without one.
    const plain = (shape ?? payloadShape(payload)) !== PayloadShape.Other;
    json = payload === null ? 'null' : JSON.stringify(payload, plain ? undefined : refuseLostValues);
  } catch (error) {
    if (error instanceof PayloadNotSerializableError) throw error;
    // BigInt and cycles throw a TypeError whose message says which.
    throw new PayloadNotSerializableError(error instanceof Error ? error.message : String(error));
  }
  // An object whose toJSON returns undefined.
  if (json === undefined) throw new PayloadNotSerializableError(`a ${typeof payload} has no JSON form`);
  return checkSize(json, maxBytes);
}

/** Called by JSON.stringify on every value after toJSON: the one place a nested function or symbol can be seen. */
function refuseLostValues(this: unknown, name: string, value: unknown): unknown {
  const type = typeof value;
  if (type === 'function' || type === 'symbol') {
    const where = name === '' ? 'the value' : Array.isArray(this) ? `element [${name}]` : `property "${name}"`;
    throw new PayloadNotSerializableError(`${where} is a ${type}, which JSON would drop`);
  }
  return value;
}

function checkSize(json: string, maxBytes: number): string {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: a short text needs no count.
  if (json.length * 3 <= maxBytes) return json;
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) throw new PayloadTooLargeError(bytes, maxBytes);
  return json;
}

export function parsePayload(json: string | undefined): unknown {
  return json === undefined ? undefined : JSON.parse(json);
}
