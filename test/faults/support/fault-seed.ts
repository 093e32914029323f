import { Random } from '../../instances/support/random';

/**
 * The seed of a fault test: FAULT_SEED replays a failing run, otherwise each
 * test has its own fixed default, so a run is reproducible either way. The
 * seed is part of every assertion's subject, so a failure prints it.
 */
export function faultRandom(defaultSeed: number): Random {
  const fromEnv = process.env.FAULT_SEED;
  return new Random(fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : defaultSeed);
}
