import { PayloadNotSerializableError } from '../errors/payload-not-serializable.error';
import { payloadShape, PayloadShape, serializePayload } from './payload-json';

const keptByJson = (value: unknown): boolean => payloadShape(value) === PayloadShape.Kept;

const LIMIT = 64 * 1024;

/** `depth` plain objects, one inside the next, with `leaf` at the bottom under the name "f". */
function nested(depth: number, leaf: unknown): Record<string, unknown> {
  let value: Record<string, unknown> = { f: leaf };
  for (let n = 0; n < depth; n++) value = { child: value };
  return value;
}

class Money {
  constructor(
    readonly cents: number,
    readonly format: () => string = () => `${cents}`,
  ) {}
}

describe('serializePayload', () => {
  it('writes plain data as JSON.stringify does, undefined properties left out', () => {
    const payloads: unknown[] = [
      { orderId: 'o-1', lines: [{ sku: 'A', qty: 2 }], note: null, gift: false, skipped: undefined },
      [1, 'two', [3, { four: 4 }], null],
      Object.assign(Object.create(null) as object, { id: 7 }),
      nested(40, 'deep'),
      { at: new Date(Date.UTC(2026, 10, 23)), total: 10 },
    ];
    for (const payload of payloads) expect(serializePayload(payload, LIMIT)).toBe(JSON.stringify(payload));
  });

  it('refuses a function or symbol wherever it sits: plain data, past the quick check\'s depth, behind toJSON or in a class instance', () => {
    const refused: Array<[unknown, string]> = [
      [{ id: 1, f: () => 1 }, 'property "f" is a function'],
      [[1, Symbol('s')], 'element [1] is a symbol'],
      [Object.assign(Object.create(null) as object, { f: () => 1 }), 'property "f" is a function'],
      [nested(40, () => 1), 'property "f" is a function'],
      [{ at: new Date(0), f: () => 1 }, 'property "f" is a function'],
      [{ toJSON: () => ({ f: Symbol('s') }) }, 'property "f" is a symbol'],
      [Object.defineProperty({ id: 1 }, 'toJSON', { value: () => ({ f: () => 1 }), enumerable: false }), 'property "f" is a function'],
      [new Money(5), 'property "format" is a function'],
    ];
    for (const [payload, message] of refused) {
      expect(() => serializePayload(payload, LIMIT)).toThrow(PayloadNotSerializableError);
      expect(() => serializePayload(payload, LIMIT)).toThrow(message);
    }
  });

  it('refuses a cycle and a BigInt with the reason JSON gives', () => {
    const cycle: Record<string, unknown> = { id: 1 };
    cycle.self = cycle;
    expect(() => serializePayload(cycle, LIMIT)).toThrow(PayloadNotSerializableError);
    expect(() => serializePayload({ amount: BigInt(10) }, LIMIT)).toThrow(/BigInt/);
  });
});

describe('payloadShape', () => {
  const kept: unknown[] = ['text', '', 0, 1.5, -3, true, false, null, [], {}, { order: { id: 'o-1', lines: [{ sku: 'A', qty: 2 }], note: null } }, [1, 'two', [3], { four: 4 }]];
  // (undefined is no payload at all: the service returns it as is without asking.)
  const changed: unknown[] = [
    NaN,
    Infinity,
    -0,
    { gone: undefined },
    [1, undefined],
    new Array(3),
    [-0],
    { at: new Date(0) },
    new Date(0),
    Object.assign(Object.create(null) as object, { id: 7 }),
    new (class Money {
      cents = 5;
    })(),
  ];

  it('says Kept only for values JSON gives back equal, type for type', () => {
    for (const value of kept) {
      expect(keptByJson(value)).toBe(true);
      expect(JSON.parse(JSON.stringify(value)) as unknown).toStrictEqual(value);
    }
    for (const value of changed) {
      expect(keptByJson(value)).toBe(false);
      const json = JSON.stringify(value) as string | undefined;
      expect(json === undefined ? undefined : (JSON.parse(json) as unknown)).not.toStrictEqual(value);
    }
  });

  it('says Plain for what JSON changes without dropping anything it refuses, Other for what the replacer must check', () => {
    expect([NaN, -0, { gone: undefined }, [1, undefined], new Array(2), Object.assign(Object.create(null) as object, { id: 7 })].map(payloadShape)).toEqual(
      Array(6).fill(PayloadShape.Plain),
    );
    expect([{ f: () => 1 }, [Symbol('s')], { toJSON: () => 1 }, new Date(0), { at: new Date(0) }, nested(40, 1), BigInt(1)].map(payloadShape)).toEqual(
      Array(7).fill(PayloadShape.Other),
    );
    expect(payloadShape(nested(20, 1))).toBe(PayloadShape.Kept);
    expect(payloadShape(nested(20, undefined))).toBe(PayloadShape.Plain);
  });
});
