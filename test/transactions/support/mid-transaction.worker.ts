// A process that dies inside its transaction: it opens a transaction with a
// plain pg client, inserts its domain row, schedules the row's delayed
// action in the same transaction through the postgres driver, tells the
// parent over IPC, and waits for the kill -9 that never lets it commit.
// Started by atomicity-crash.e2e-spec.ts with the instances' require hook.
import { Injectable } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Module } from '@nestjs/common';
import { DelayModule, DelayService, OnDelayExpired } from 'nestjs-delay';
import { Client } from 'pg';

const { url, schema, key } = JSON.parse(process.env.MID_TRANSACTION ?? '{}') as { url: string; schema: string; key: string };

@Injectable()
class Unpaid {
  @OnDelayExpired('order.unpaid')
  cancel(): void {
    // Never reached: this process dies before anything is due.
  }
}

@Module({ imports: [DelayModule.forRoot({ driver: { type: 'postgres', connectionString: url, schema } })], providers: [Unpaid] })
class WorkerModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: false });
  const delay = app.get(DelayService);
  const client = new Client({ connectionString: url });
  await client.connect();
  await client.query('BEGIN');
  await client.query('INSERT INTO orders (id) VALUES ($1)', [key]);
  await delay.schedule('order.unpaid', key, { delay: '30m', transaction: client });
  process.send?.({ type: 'in-transaction' });
  // Wait for the parent's kill -9, with the transaction open.
  setInterval(() => undefined, 60_000);
}

void main().catch((error: unknown) => {
  process.send?.({ type: 'failed', error: String(error) });
  process.exit(1);
});
