/**
 * How late a run on a real-time driver (Redis, PostgreSQL) may start and still
 * count as woken by its own due time.
 *
 * A driver that missed its timer would be woken by its periodic look
 * (`wakeCheck`, 10 s by default), so 2 s still tells the two apart; what lies
 * between the driver's usual lateness (a few ms) and this bound is room for a
 * machine busy with other work, where a process can wait its turn for a core
 * for hundreds of ms. How late runs are when the machine is not busy is
 * measured by the benchmarks, not asserted here.
 */
export const REAL_TIME_ON_TIME_MS = 2_000;
