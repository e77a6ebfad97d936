// The outbound benchmark's peer: Debian's Postfix as a relay, a throwaway instance with its own config, queue and
// data directories under the run's temp dir. smtpd on 127.0.0.1:<port> accepts mail from 127.0.0.0/8 (the bench
// submits there, as an agent's application would submit to its MTA), cleanup writes and fsyncs the queue file
// before the 250 after DATA, then qmgr hands it to the smtp client, which relays it to the bench sink
// (relayhost [127.0.0.1]:<sinkPort>, no DNS). Postfix's defaults otherwise (connection cache on demand, 20
// parallel deliveries per destination, slow start), except the retry schedule, shortened like ours for the
// deferral run: deferred queue scanned every second, first retry after 2 s, doubling up to 60 s. No TLS on either
// side (the sink offers none, so our delivery goes plain too).
import { startPostfixInstance, type PostfixInstance } from "./postfix.js";
import type { Teardown } from "./stack.js";

export type PostfixRelay = PostfixInstance;

export async function startPostfixRelay(workDir: string, port: number, sinkPort: number, teardown: Teardown): Promise<PostfixRelay> {
  return startPostfixInstance(
    workDir,
    port,
    {
      mainCf: `
myhostname = postfix-relay.bench.localhost
mydomain = bench.localhost
myorigin = bench.localhost
mydestination =
smtpd_relay_restrictions = permit_mynetworks, reject
relayhost = [127.0.0.1]:${sinkPort}
smtp_tls_security_level = none
smtpd_tls_security_level = none
default_process_limit = 300
queue_run_delay = 1s
minimal_backoff_time = 2s
maximal_backoff_time = 60s
`,
      services: `
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
`,
    },
    teardown,
  );
}
