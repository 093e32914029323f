import type { Cluster, Redis } from 'ioredis';

/** The ioredis client the driver talks through: one server (or a Sentinel group), or a Cluster. */
export type RedisClient = Redis | Cluster;
