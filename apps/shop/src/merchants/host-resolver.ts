import { Injectable } from '@nestjs/common';
import { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';

/** Every address a host name resolves to, as the operating system resolves it (hosts file included). */
@Injectable()
export class HostResolver {
  resolve(hostname: string): Promise<LookupAddress[]> {
    return lookup(hostname, { all: true, verbatim: true });
  }
}
