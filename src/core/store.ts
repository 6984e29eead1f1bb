/**
 * The generation store: the one owner of every account's generations and images. It gives each
 * generation its place in creation order, indexes them by id, pages them, keeps the change sequence
 * a live view follows, and applies the global limit on what is stored (`limits.max_stored_generations`,
 * across accounts: past it the generation that resolved first goes, and separately the oldest
 * image).
 *
 * Its state is the generations and images it holds and four counters (`nextSeq`, `changeSeq`,
 * `storedResolved`, `evictedGenerations`); every other field is an index over them, in the order
 * they were added, resolved or changed.
 */
import { generationToState, type Generation, type GenerationState } from './generation.js';
import type { Image } from './image.js';
import { OldestFirst } from './limits.js';
import { firstAfter, takePage } from './paging.js';
import type { VideoStatus } from './pipeline.js';

/** One account's part of the store. */
interface Holdings {
  /** Its generations in creation order; evicted ones are dropped lazily (see `dropFromList`). */
  list: Generation[];
  evictedInList: number;
  images: Map<string, Image>;
  /** Changes to its generations: the account's own change sequence (its control list's cursor). */
  changes: number;
}

/** A page of generations across accounts. */
export interface GenerationPage {
  data: Generation[];
  hasMore: boolean;
  /** Where the next `changedSince` starts. */
  cursor: number;
}

/**
 * The store's state as plain data (a snapshot): the stored generations in creation order, the
 * stored images in the order they were stored, and the counters. The indexes follow from them:
 * a resolved generation never changes again, so the order generations resolved in is the order of
 * their latest change.
 */
export interface StoreState extends StoreCounters {
  /** Each account's change count (a cursor of its control list), where it is past its stored generations' latest. */
  account_changes?: Record<string, number>;
  generations: GenerationState[];
  images: Image[];
}

/** The store's counters: what a snapshot holds of it beside its generations and images. */
export interface StoreCounters {
  next_seq: number;
  change_seq: number;
  evicted_generations: number;
}

/** Lists with fewer entries than this are never compacted. */
const COMPACT_MIN = 1024;

export class GenerationStore {
  /** Every stored generation by id, whatever its account. */
  private readonly byId = new Map<string, Generation>();
  private readonly holdings = new Map<string, Holdings>();
  /** Every stored generation across accounts, in creation order; evicted ones are dropped lazily. */
  private order: Generation[] = [];
  private evictedInOrder = 0;
  private nextSeq = 0;
  /** Every change to a generation gets the next number. */
  private changeSeq = 0;
  /** The change log as two parallel arrays (sequence numbers, generations), oldest first. */
  private changeSeqs: number[] = [];
  private changed: Generation[] = [];
  /** Resolved generations in the order they resolved, and how many of them are stored. */
  private readonly resolvedQueue = new OldestFirst<Generation>((g) => !g.evicted);
  private storedResolved = 0;
  /** Images in the order they were stored, and how many are stored. */
  private readonly imageQueue = new OldestFirst<Image>((image) => this.holdings.get(image.account)?.images.get(image.id) === image);
  private storedImages = 0;
  /** Resolved generations dropped for the limit. */
  evictedGenerations = 0;

  constructor(private readonly maxStored: number) {}

  /** The creation order a new generation takes across all accounts. */
  takeSeq(): number {
    return this.nextSeq++;
  }

  /** Stores a new generation (its first change is told by `changed` when it enters its first stage). */
  add(g: Generation): void {
    this.byId.set(g.fate.id, g);
    this.order.push(g);
    this.holdingsOf(g.account).list.push(g);
  }

  /** A stored generation by id, whatever its account. */
  get(id: string): Generation | undefined {
    return this.byId.get(id);
  }

  /** A stored generation of one account. */
  ownedBy(account: string, id: string): Generation | undefined {
    const g = this.byId.get(id);
    return g !== undefined && g.account === account ? g : undefined;
  }

  /**
   * One account's generations after the one with id `after` (all when null), oldest first,
   * filtered by status; undefined when `after` is not one of its generations.
   */
  page(account: string, after: string | null, limit: number, status: string | null): { data: Generation[]; hasMore: boolean } | undefined {
    const list = this.holdings.get(account)?.list ?? [];
    let start = 0;
    if (after !== null) {
      const anchor = this.ownedBy(account, after);
      if (!anchor) return undefined;
      start = firstAfter(list, anchor.index, (g) => g.index);
    }
    const { data, hasMore } = takePage(list, start, limit, (g) => !g.evicted && (status === null || g.status === status));
    return { data, hasMore };
  }

  /**
   * Generations across accounts (or of one) created after the one with sequence `afterSeq`, in
   * creation order; or, with `changedSince`, those changed after that cursor, in the order of
   * their latest change. The cursor of one account's list counts that account's changes only, so
   * it is the same whatever other accounts do (and wherever else they are served).
   */
  list(filter: { account: string | null; status: VideoStatus | null; afterSeq: number; changedSince: number | null }, limit: number): GenerationPage {
    const keep = (g: Generation): boolean =>
      !g.evicted &&
      g.globalSeq > filter.afterSeq &&
      (filter.account === null || g.account === filter.account) &&
      (filter.status === null || g.status === filter.status);
    if (filter.account !== null) return this.accountList(filter.account, filter.changedSince, keep, limit);
    if (filter.changedSince !== null) {
      // The change log holds an entry per change; only a generation's latest one counts.
      const page = takePage(
        this.changed,
        firstAfter(this.changeSeqs, filter.changedSince, (seq) => seq),
        limit,
        (g, i) => g.changeSeq === this.changeSeqs[i] && keep(g),
      );
      return { data: page.data, hasMore: page.hasMore, cursor: page.hasMore ? (this.changeSeqs[page.last] as number) : this.changeSeq };
    }
    const start = filter.afterSeq < 0 ? 0 : firstAfter(this.order, filter.afterSeq, (g) => g.globalSeq);
    const page = takePage(this.order, start, limit, keep);
    return { data: page.data, hasMore: page.hasMore, cursor: this.changeSeq };
  }

  /** One account's part of `list`: its own list, and its own change sequence for the cursor. */
  private accountList(account: string, changedSince: number | null, keep: (g: Generation) => boolean, limit: number): GenerationPage {
    const held = this.holdings.get(account);
    if (!held) return { data: [], hasMore: false, cursor: 0 };
    if (changedSince === null) {
      const page = takePage(held.list, 0, limit, keep);
      return { data: page.data, hasMore: page.hasMore, cursor: held.changes };
    }
    const changed = held.list.filter((g) => g.accountChangeSeq > changedSince && keep(g)).sort((a, b) => a.accountChangeSeq - b.accountChangeSeq);
    if (changed.length <= limit) return { data: changed, hasMore: false, cursor: held.changes };
    const data = changed.slice(0, limit);
    return { data, hasMore: true, cursor: (data[limit - 1] as Generation).accountChangeSeq };
  }

  /** How many generations are stored, in-flight ones included. */
  get storedGenerations(): number {
    return this.order.length - this.evictedInOrder;
  }

  /** Stores an image (created, or generated by a video's keyframe stage); past the limit, the oldest image goes, whatever its account. */
  addImage(image: Image): void {
    this.holdingsOf(image.account).images.set(image.id, image);
    this.imageQueue.push(image);
    this.storedImages++;
    while (this.storedImages > this.maxStored) {
      const oldest = this.imageQueue.take();
      if (!oldest) break;
      this.holdings.get(oldest.account)?.images.delete(oldest.id);
      this.storedImages--;
    }
    this.imageQueue.prune(this.storedImages);
  }

  /** One account's images, by id. */
  imagesOf(account: string): ReadonlyMap<string, Image> {
    return this.holdings.get(account)?.images ?? NO_IMAGES;
  }

  /** A stored image by id, whatever its account. Accounts' images are indexed apart, so this asks each. */
  image(id: string): Image | undefined {
    for (const held of this.holdings.values()) {
      const image = held.images.get(id);
      if (image !== undefined) return image;
    }
    return undefined;
  }

  /** A generation was created or changed (a stage entered or left, resolved, canceled): it takes the next change number. */
  recordChange(g: Generation): void {
    g.changeSeq = ++this.changeSeq;
    g.accountChangeSeq = ++this.holdingsOf(g.account).changes;
    this.changeSeqs.push(g.changeSeq);
    this.changed.push(g);
    if (this.changeSeqs.length > 4 * COMPACT_MIN && this.changeSeqs.length > 2 * this.storedGenerations) {
      const seqs: number[] = [];
      const gens: Generation[] = [];
      for (let i = 0; i < this.changeSeqs.length; i++) {
        const gen = this.changed[i] as Generation;
        if (gen.changeSeq === this.changeSeqs[i] && !gen.evicted) {
          seqs.push(gen.changeSeq);
          gens.push(gen);
        }
      }
      this.changeSeqs = seqs;
      this.changed = gens;
    }
  }

  /**
   * A generation resolved (its change recorded): it now counts against the limit, and past it the
   * generation that resolved first goes, whatever its account, with the keyframe generated for it
   * (an image of its own, from POST /v1/images, stays).
   */
  recordResolved(g: Generation): void {
    this.resolvedQueue.push(g);
    this.storedResolved++;
    while (this.storedResolved > this.maxStored) {
      const oldest = this.resolvedQueue.take();
      if (!oldest) break;
      const { fate } = oldest;
      const held = this.holdings.get(oldest.account);
      if (fate.keyframeMode === 'generated' && fate.keyframeImageId !== null && held?.images.delete(fate.keyframeImageId)) this.storedImages--;
      this.evict(oldest);
      this.storedResolved--;
      this.evictedGenerations++;
    }
    this.resolvedQueue.prune(this.storedResolved);
  }

  /** Drops everything of an account: a per-account reset, or the account dropped for `max_accounts`. */
  forgetAccount(account: string): void {
    const held = this.holdings.get(account);
    if (!held) return;
    this.holdings.delete(account);
    for (const g of held.list) {
      if (g.evicted) continue;
      if (g.completedAt !== null) this.storedResolved--;
      this.evict(g);
    }
    this.storedImages -= held.images.size;
    this.resolvedQueue.prune(this.storedResolved);
    this.imageQueue.prune(this.storedImages);
  }

  toState(): StoreState {
    const { counters, generations, images, accountChanges } = this.capture();
    return {
      ...counters,
      ...(accountChanges.length > 0 && { account_changes: Object.fromEntries(accountChanges) }),
      generations: generations.map(generationToState),
      images,
    };
  }

  /**
   * What a snapshot holds of the store, as it is now, without copying a generation: the counters,
   * the stored generations in creation order, the stored images in the order they were stored
   * (new arrays; the items are the store's own), and each account's change count where its stored
   * generations do not already show it (some were evicted, or changed since).
   */
  capture(): { counters: StoreCounters; generations: Generation[]; images: Image[]; accountChanges: [account: string, changes: number][] } {
    const generations = this.order.filter((g) => !g.evicted);
    const shown = new Map<string, number>();
    for (const g of generations) shown.set(g.account, Math.max(shown.get(g.account) ?? 0, g.accountChangeSeq));
    const accountChanges: [string, number][] = [];
    for (const [account, held] of this.holdings) if (held.changes > (shown.get(account) ?? 0)) accountChanges.push([account, held.changes]);
    return {
      counters: { next_seq: this.nextSeq, change_seq: this.changeSeq, evicted_generations: this.evictedGenerations },
      generations,
      images: this.imageQueue.peekAll(),
      accountChanges,
    };
  }

  /**
   * Fills an empty store with what `capture` gave (the generations in creation order, the images
   * in the order they were stored, the accounts' change counts). The indexes follow from them: a resolved generation never
   * changes again, so the order generations resolved in is the order of their latest change.
   */
  restore(
    counters: StoreCounters,
    generations: readonly Generation[],
    images: readonly Image[],
    accountChanges: readonly (readonly [account: string, changes: number])[] = [],
  ): void {
    for (const g of generations) this.add(g);
    this.nextSeq = counters.next_seq;
    this.changeSeq = counters.change_seq;
    this.evictedGenerations = counters.evicted_generations;
    const byChange = generations.slice().sort((a, b) => a.changeSeq - b.changeSeq);
    this.changeSeqs = byChange.map((g) => g.changeSeq);
    this.changed = byChange;
    for (const g of byChange) {
      const held = this.holdingsOf(g.account);
      // A snapshot without accounts' change numbers: each account's changes counted in the global order.
      if (g.accountChangeSeq === 0) g.accountChangeSeq = held.changes + 1;
      held.changes = Math.max(held.changes, g.accountChangeSeq);
    }
    for (const [account, changes] of accountChanges) {
      const held = this.holdingsOf(account);
      held.changes = Math.max(held.changes, changes);
    }
    for (const g of byChange) {
      if (g.completedAt === null) continue;
      this.resolvedQueue.push(g);
      this.storedResolved++;
    }
    for (const image of images) {
      // Only what is read of an image (files written by earlier versions hold more).
      this.holdingsOf(image.account).images.set(image.id, { id: image.id, account: image.account, prompt: image.prompt, aspectRatio: image.aspectRatio });
      this.imageQueue.push(this.holdings.get(image.account)?.images.get(image.id) as Image);
      this.storedImages++;
    }
  }

  private holdingsOf(account: string): Holdings {
    let held = this.holdings.get(account);
    if (!held) {
      held = { list: [], evictedInList: 0, images: new Map(), changes: 0 };
      this.holdings.set(account, held);
    }
    return held;
  }

  /** Drops a generation from the indexes; the lists drop it lazily, in batches once they are at least half gone. */
  private evict(g: Generation): void {
    g.evicted = true;
    this.byId.delete(g.fate.id);
    const held = this.holdings.get(g.account);
    if (held && ++held.evictedInList > COMPACT_MIN && held.evictedInList * 2 > held.list.length) {
      held.list = held.list.filter((x) => !x.evicted);
      held.evictedInList = 0;
    }
    if (++this.evictedInOrder > COMPACT_MIN && this.evictedInOrder * 2 > this.order.length) {
      this.order = this.order.filter((x) => !x.evicted);
      this.evictedInOrder = 0;
    }
  }
}

const NO_IMAGES: ReadonlyMap<string, Image> = new Map();

