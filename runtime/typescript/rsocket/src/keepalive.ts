/**
 * Keepalive timing (twin of runtime/rsocket/keepalive.py): when the client's next
 * KEEPALIVE is due and when the peer has been silent longer than Max Lifetime. Times are
 * the caller's clock in milliseconds, as the SETUP's are.
 */

export class KeepaliveTimer {
  nextSend: number | null = null;
  lastHeard = 0;
  private interval = 0;
  private lifetime = 0;
  private deadReported = false;

  /** Start the clocks; `sends`: we are the client, who sends KEEPALIVE. */
  start(now: number, interval: number, lifetime: number, sends: boolean): void {
    this.lastHeard = now;
    this.deadReported = false;
    this.interval = interval;
    this.lifetime = lifetime;
    this.nextSend = sends && interval > 0 ? now + interval : null;
  }

  heard(now: number): void {
    this.lastHeard = now;
    this.deadReported = false;
  }

  /** The next time `sendDue` or `dead` may change their answer (null: none). */
  deadline(): number | null {
    let next: number | null = this.nextSend;
    if (this.lifetime > 0 && !this.deadReported) {
      const due = this.lastHeard + this.lifetime;
      next = next === null ? due : Math.min(next, due);
    }
    return next;
  }

  /** Whether a KEEPALIVE is due now; the next is then one interval later. */
  sendDue(now: number): boolean {
    if (this.nextSend === null || now < this.nextSend) {
      return false;
    }
    this.nextSend += this.interval;
    if (this.nextSend <= now) {
      this.nextSend = now + this.interval;
    }
    return true;
  }

  /** How long the peer has been silent, the first time that exceeds Max Lifetime. */
  dead(now: number): number | null {
    if (this.lifetime <= 0 || this.deadReported) {
      return null;
    }
    const silent = now - this.lastHeard;
    if (silent < this.lifetime) {
      return null;
    }
    this.deadReported = true;
    return silent;
  }
}
