// Open connections per peer, the unit one client controls (an IPv4 address, an IPv6 /64: the failure limiter's
// unit too), so that one peer cannot hold every connection of a listener.
import { peerKey } from "../auth/peer-address.js";

export class PeerConnections {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** Counts a new connection from `address` and answers how to uncount it; undefined when its peer is at the limit. */
  admit(address: string | undefined): (() => void) | undefined {
    const peer = peerKey(address);
    const open = this.open.get(peer) ?? 0;
    if (open >= this.max) return undefined;
    this.open.set(peer, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = this.open.get(peer)! - 1;
      if (left === 0) this.open.delete(peer);
      else this.open.set(peer, left);
    };
  }
}
