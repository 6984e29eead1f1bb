/**
 * The simulator's instants and media address: one request, one instant of the clock (every
 * reading within it gives the same time, in realtime mode too), and the media address the answers
 * made within it are written on.
 */

/** The host's time, the media address and the clock's start as one instant holds them. */
export class Instants {
  /** The simulator's own media address, without a trailing slash. */
  private mediaUrl: string;
  /** The wall-clock reading that `atOneInstant` holds while it runs, if it runs. */
  private heldWallMs: number | undefined;
  private instantStartMs: number | undefined;
  /** The media address `atOneInstant` was given for the request it runs, if any. */
  private instantMediaUrl: string | undefined;

  constructor(
    cdnUrl: string,
    private readonly wallClock: () => number,
    /** The global clock's time, where an instant begins. */
    private readonly clockNow: () => number,
  ) {
    this.mediaUrl = withoutTrailingSlash(cdnUrl);
  }

  /**
   * The media address written into `output.url`, `thumbnail_url` and image `url`, without a
   * trailing slash: the one the current request's answer follows (see `atOneInstant`), else the
   * simulator's own.
   */
  get cdnUrl(): string {
    return this.instantMediaUrl ?? this.mediaUrl;
  }

  /**
   * The simulator's own media address, whatever the request being answered: what transcripts and
   * state files record as the address they were made on. Set (an http(s) URL; a trailing slash is
   * dropped) once the server listens.
   */
  get ownCdnUrl(): string {
    return this.mediaUrl;
  }

  set ownCdnUrl(url: string) {
    this.mediaUrl = withoutTrailingSlash(url);
  }

  /** Whether the answers being made now write their media URLs on the Host their request used (see `atOneInstant`). */
  get answersFollowHost(): boolean {
    return this.instantMediaUrl !== undefined;
  }

  /**
   * Runs `fn` at one instant: every reading of the clock within it (a reset's new clock included)
   * gives the same time, in realtime mode too. So one request's timestamps agree with each other
   * and with the time it was handled at, which is what makes a realtime run replay identically on a
   * clock that moves only between requests. Nested calls share the outer instant. `mediaUrl`: the
   * media address the answers made within it are written on (a request's Host's, when the
   * simulator follows the Host it is reached under), else the simulator's own.
   */
  atOneInstant<T>(fn: () => T, mediaUrl?: string): T {
    if (this.heldWallMs !== undefined) return fn();
    this.heldWallMs = this.wallClock();
    this.instantStartMs = this.clockNow();
    this.instantMediaUrl = mediaUrl;
    try {
      return fn();
    } finally {
      this.heldWallMs = undefined;
      this.instantStartMs = undefined;
      this.instantMediaUrl = undefined;
    }
  }

  /**
   * The global time at which the current instant began, before anything done within it moved the
   * clock (an advance, a reset); undefined outside an instant.
   */
  get startMs(): number | undefined {
    return this.instantStartMs;
  }

  /** The host's time (the injected wall clock) at the current instant, or now outside one. */
  hostTimeMs(): number {
    return this.heldWallMs ?? this.wallClock();
  }
}

export function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
