/**
 * The generation store: the one owner of every account's generations and images. It gives each
 * generation its place in creation order, indexes them by id, pages them, keeps the change sequence
 * a live view follows, and applies the global limit on what is stored
 * (`limits.max_stored_generations`, across accounts).
 *
 * What counts against the limit is every video generation, in flight or resolved, and every image
 * made by `POST /v1/images` (a keyframe generated for a video is part of that video, and goes with
 * it). A create at the limit first makes room: what resolved first goes (an image resolves when it
 * is made), whatever its account; when nothing stored has resolved, the create is refused (429).
 * What goes leaves every index and list at once (`SlotList`), so nothing here keeps its memory.
 *
 * Its state is the generations and images it holds, three counters (`nextSeq`, `changeSeq`,
 * `evictedGenerations`) and each account's change count; every other field is an index over them,
 * in the order they were added, resolved or changed.
 */
import { fail } from '../errors.js';
import { generationToState, type Generation, type GenerationState } from './generation.js';
import { fnv1a32 } from '../hash.js';
import type { Image } from './image.js';
import { CURSOR_TAGS, SlotList, cursorOf, keyOfCursor, type SlotField } from '../paging.js';
import type { VideoStatus } from './pipeline.js';

/** One account's part of the store. */
interface Holdings {
  /** Its generations in creation order. */
  list: SlotList<Generation>;
  /** Its images (made by `POST /v1/images`, and generated for its videos), by id. */
  images: Map<string, Image>;
  /** Its stored generations once each, at its latest change (keyed by the account's change number). */
  changeList: SlotList<Generation>;
  /** Changes to its generations: the account's own change sequence (its control list's cursor). */
  changes: number;
}

/** What counts against the limit: a video generation, or an image made by `POST /v1/images`. */
type Counted = Generation | Image;

/** A page of generations across accounts. */
export interface GenerationPage {
  data: Generation[];
  hasMore: boolean;
  /** Where the next `changedSince` starts. */
  cursor: number;
}

/**
 * A stored image as a snapshot keeps it. `after_change`, on an image made by `POST /v1/images`:
 * the change number of the last generation that resolved before it was made (0: none), which
 * places it among the resolved generations in the order things resolved (files of earlier
 * versions leave it out: such an image counts as resolved before every generation).
 */
export interface ImageState {
  id: string;
  account: string;
  prompt: string;
  aspectRatio: Image['aspectRatio'];
  after_change?: number;
}

/**
 * The store's state as plain data (a snapshot): the stored generations in creation order, the
 * stored images (those made by `POST /v1/images` in the order they were made, then the keyframes
 * generated for videos), and the counters. The indexes follow from them: a resolved generation
 * never changes again, so the order generations resolved in is the order of their latest change.
 */
export interface StoreState extends StoreCounters {
  /** Each account's change count (a cursor of its control list), where it is past its stored generations' latest. */
  account_changes?: Record<string, number>;
  generations: GenerationState[];
  images: ImageState[];
}

/** The store's counters: what a snapshot holds of it beside its generations and images. */
export interface StoreCounters {
  next_seq: number;
  change_seq: number;
  evicted_generations: number;
}

const LIST_SLOT: SlotField<Generation> = { get: (g) => g.listSlot, set: (g, slot) => (g.listSlot = slot) };
const ORDER_SLOT: SlotField<Generation> = { get: (g) => g.orderSlot, set: (g, slot) => (g.orderSlot = slot) };
const CHANGE_SLOT: SlotField<Generation> = { get: (g) => g.changeSlot, set: (g, slot) => (g.changeSlot = slot) };
const ACCOUNT_CHANGE_SLOT: SlotField<Generation> = { get: (g) => g.accountChangeSlot, set: (g, slot) => (g.accountChangeSlot = slot) };
const RESOLVED_SLOT: SlotField<Counted> = { get: (x) => x.resolvedSlot, set: (x, slot) => (x.resolvedSlot = slot) };

const isGeneration = (x: Counted): x is Generation => 'fate' in x;

/** The cursor tag of the list across accounts. */
const GLOBAL_TAG = 0;

/**
 * The cursor tag of an account's list: from its key alone (1 to CURSOR_TAGS - 1), so that it is the
 * same on every shard and after a restart. Two accounts share a tag once in 65,535 pairs: a cursor
 * of one is then read in the other's list, as every cursor was before cursors named their list.
 */
function accountCursorTag(account: string): number {
  return 1 + (fnv1a32(account) % (CURSOR_TAGS - 1));
}

/** The 400 for a `changed_since` that another list answered. */
function foreignCursor(account: string | null) {
  const [list, others] = account === null ? ['every account\'s generations', "an account's list (asked with api_key)"] : ["this api_key's generations", "another account's list, or the list of every account (asked without api_key)"];
  return fail('invalid_parameter', {
    param: 'changed_since',
    message: `'changed_since' is not a cursor of this list (${list}): a cursor names the list that answered it, and ${others} marks no place in this one. Pass a cursor this list answered, or 0 for every change.`,
  });
}

export class GenerationStore {
  /** Every stored generation by id, whatever its account. */
  private readonly byId = new Map<string, Generation>();
  private readonly holdings = new Map<string, Holdings>();
  /** Every stored generation across accounts, in creation order. */
  private readonly order = new SlotList<Generation>(ORDER_SLOT);
  /** Every stored generation once, at its latest change (keyed by its change number). */
  private readonly changes = new SlotList<Generation>(CHANGE_SLOT, { keyed: true });
  /** What counts and has resolved, in the order it resolved: the first goes first. */
  private readonly resolved = new SlotList<Counted>(RESOLVED_SLOT);
  /** How many stored things count against the limit. */
  private counted = 0;
  private nextSeq = 0;
  /** Every change to a generation gets the next number. */
  private changeSeq = 0;
  /** Generations and images dropped for the limit. */
  evictedGenerations = 0;

  constructor(private readonly maxStored: number) {}

  /** The creation order a new generation takes across all accounts. */
  takeSeq(): number {
    return this.nextSeq++;
  }

  /**
   * Makes room for one more generation or image, called by a create once every other check has
   * passed: at the limit, what resolved first goes (a video with the keyframe generated for it, or
   * an image), whatever its account; when nothing stored has resolved, the create is refused with
   * 429 `rate_limit_exceeded` and `Retry-After: 1`.
   */
  makeRoom(): void {
    while (this.counted >= this.maxStored) {
      const first = this.resolved.first();
      if (first === undefined) {
        throw fail('rate_limit_exceeded', {
          message:
            `The simulator holds ${this.maxStored} generations and images, its limit (limits.max_stored_generations), and none of them has resolved, ` +
            'so none can make room. Advance the clock (POST /_sim/clock/advance) so that generations resolve, or raise limits.max_stored_generations.',
          headers: { 'Retry-After': '1' },
        });
      }
      if (isGeneration(first)) this.evict(first);
      else this.dropImage(first);
      this.evictedGenerations++;
    }
  }

  /** Stores a new generation, once `makeRoom` made room (its first change is told by `recordChange` when it enters its first stage). */
  add(g: Generation): void {
    this.byId.set(g.fate.id, g);
    this.order.push(g);
    this.holdingsOf(g.account).list.push(g);
    this.counted++;
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
    const list = this.holdings.get(account)?.list;
    let start = 0;
    if (after !== null) {
      const anchor = this.ownedBy(account, after);
      if (!anchor || !list) return undefined;
      start = list.after(anchor);
    }
    if (!list) return { data: [], hasMore: false };
    const { data, hasMore } = list.page(start, limit, (g) => status === null || g.status === status);
    return { data, hasMore };
  }

  /**
   * Generations across accounts (or of one) created after the stored generation `after` (all when
   * null), in creation order; or, with `changedSince`, those changed after that cursor, in the
   * order of their latest change. The cursor of one account's list counts that account's changes
   * only, so it is the same whatever other accounts do (and wherever else they are served). A
   * cursor names its list (`cursorOf`): one of another list (the list across accounts, another
   * account's) is 400 `invalid_parameter`, param `changed_since`, since no place in this list
   * follows from it.
   */
  list(filter: { account: string | null; status: VideoStatus | null; after: Generation | null; changedSince: number | null }, limit: number): GenerationPage {
    const tag = filter.account === null ? GLOBAL_TAG : accountCursorTag(filter.account);
    const since = filter.changedSince === null ? null : keyOfCursor(filter.changedSince, tag);
    if (since === null && filter.changedSince !== null) throw foreignCursor(filter.account);
    const afterSeq = filter.after?.globalSeq ?? -1;
    const keep = (g: Generation): boolean =>
      g.globalSeq > afterSeq && (filter.account === null || g.account === filter.account) && (filter.status === null || g.status === filter.status);
    if (filter.account !== null) return this.accountList(filter.account, filter.after, since, keep, limit, tag);
    if (since !== null) {
      const page = this.changes.page(this.changes.afterKey(since), limit, keep);
      return { data: page.data, hasMore: page.hasMore, cursor: cursorOf(page.hasMore ? page.lastKey : this.changeSeq, tag) };
    }
    const page = this.order.page(filter.after ? this.order.after(filter.after) : 0, limit, keep);
    return { data: page.data, hasMore: page.hasMore, cursor: cursorOf(this.changeSeq, tag) };
  }

  /** One account's part of `list`: its own lists, and its own change sequence for the cursor. */
  private accountList(
    account: string,
    after: Generation | null,
    since: number | null,
    keep: (g: Generation) => boolean,
    limit: number,
    tag: number,
  ): GenerationPage {
    const held = this.holdings.get(account);
    if (!held) return { data: [], hasMore: false, cursor: 0 };
    if (since !== null) {
      const page = held.changeList.page(held.changeList.afterKey(since), limit, keep);
      return { data: page.data, hasMore: page.hasMore, cursor: cursorOf(page.hasMore ? page.lastKey : held.changes, tag) };
    }
    // An anchor of another account is only a place in creation order (`keep` compares it).
    const page = held.list.page(after !== null && after.account === account ? held.list.after(after) : 0, limit, keep);
    return { data: page.data, hasMore: page.hasMore, cursor: cursorOf(held.changes, tag) };
  }

  /** How many generations and images count against the limit now (in-flight generations included). */
  get storedGenerations(): number {
    return this.counted;
  }

  /** Stores an image made by `POST /v1/images`, once `makeRoom` made room: it counts, and has resolved. */
  addImage(image: Image): void {
    this.holdingsOf(image.account).images.set(image.id, image);
    this.resolved.push(image);
    this.counted++;
  }

  /** Stores the keyframe a video's keyframe stage generated: part of the video, it goes with it. */
  addKeyframe(image: Image): void {
    this.holdingsOf(image.account).images.set(image.id, image);
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
    this.changes.remove(g);
    this.changes.push(g, g.changeSeq);
    const held = this.holdingsOf(g.account);
    g.accountChangeSeq = ++held.changes;
    held.changeList.remove(g);
    held.changeList.push(g, g.accountChangeSeq);
  }

  /** A generation resolved (its change recorded): it may now make room for a create. */
  recordResolved(g: Generation): void {
    this.resolved.push(g);
  }

  /** Drops everything of an account: a per-account reset, or the account dropped for `max_accounts`. */
  forgetAccount(account: string): void {
    const held = this.holdings.get(account);
    if (!held) return;
    for (const g of held.list.values()) this.evict(g);
    for (const image of held.images.values()) {
      if (image.resolvedSlot < 0) continue; // a generated keyframe, gone with its video
      this.resolved.remove(image);
      this.counted--;
    }
    this.holdings.delete(account);
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
   * the stored generations in creation order (a new array; the items are the store's own), the
   * stored images (those made by `POST /v1/images` in the order they were made, each with its
   * place among the resolved generations, then the keyframes generated for videos), and each
   * account's change count where its stored generations do not already show it (some were
   * evicted, or changed since).
   */
  capture(): { counters: StoreCounters; generations: Generation[]; images: ImageState[]; accountChanges: [account: string, changes: number][] } {
    const made: ImageState[] = [];
    let lastResolvedChange = 0;
    for (const x of this.resolved.values()) {
      if (isGeneration(x)) lastResolvedChange = x.changeSeq;
      else made.push({ ...imageState(x), after_change: lastResolvedChange });
    }
    const generated: ImageState[] = [];
    const accountChanges: [string, number][] = [];
    for (const [account, held] of this.holdings) {
      for (const image of held.images.values()) if (image.resolvedSlot < 0) generated.push(imageState(image));
      // The latest change its stored generations show is that of the last of its change list.
      const shown = held.changeList.last()?.accountChangeSeq ?? 0;
      if (held.changes > shown) accountChanges.push([account, held.changes]);
    }
    return {
      counters: { next_seq: this.nextSeq, change_seq: this.changeSeq, evicted_generations: this.evictedGenerations },
      generations: this.order.values(),
      images: [...made, ...generated],
      accountChanges,
    };
  }

  /**
   * Fills an empty store with what `capture` gave (or an earlier version's snapshot): the
   * generations in creation order, the images, the accounts' change counts. The indexes follow
   * from them: a resolved generation never changes again, so the order generations resolved in is
   * the order of their latest change. A state kept under a higher limit is kept whole: creates make
   * room from it one by one.
   */
  restore(
    counters: StoreCounters,
    generations: readonly Generation[],
    images: readonly ImageState[],
    accountChanges: readonly (readonly [account: string, changes: number])[] = [],
  ): void {
    for (const g of generations) this.add(g);
    this.nextSeq = counters.next_seq;
    this.changeSeq = counters.change_seq;
    this.evictedGenerations = counters.evicted_generations;
    const byChange = generations.slice().sort((a, b) => a.changeSeq - b.changeSeq);
    for (const g of byChange) {
      this.changes.push(g, g.changeSeq);
      const held = this.holdingsOf(g.account);
      // A snapshot without accounts' change numbers: each account's changes counted in the global order.
      if (g.accountChangeSeq === 0) g.accountChangeSeq = held.changes + 1;
      held.changes = Math.max(held.changes, g.accountChangeSeq);
      held.changeList.push(g, g.accountChangeSeq);
    }
    for (const [account, changes] of accountChanges) {
      const held = this.holdingsOf(account);
      held.changes = Math.max(held.changes, changes);
    }
    // The order things resolved in: resolved generations by their last change, each made image
    // just after the generation that resolved last before it.
    const resolved: { at: number; x: Counted }[] = byChange.filter((g) => g.completedAt !== null).map((g) => ({ at: g.changeSeq, x: g }));
    const generatedIds = new Set(generations.map((g) => (g.fate.keyframeMode === 'generated' ? g.fate.keyframeImageId : null)));
    for (const s of images) {
      // Only what is read of an image (files written by earlier versions hold more).
      const image: Image = { id: s.id, account: s.account, prompt: s.prompt, aspectRatio: s.aspectRatio, resolvedSlot: -1 };
      this.holdingsOf(image.account).images.set(image.id, image);
      if (generatedIds.has(image.id)) continue;
      resolved.push({ at: (s.after_change ?? -1) + 0.5, x: image });
      this.counted++;
    }
    resolved.sort((a, b) => a.at - b.at);
    for (const { x } of resolved) this.resolved.push(x);
  }

  private holdingsOf(account: string): Holdings {
    let held = this.holdings.get(account);
    if (!held) {
      held = { list: new SlotList(LIST_SLOT), images: new Map(), changeList: new SlotList(ACCOUNT_CHANGE_SLOT, { keyed: true }), changes: 0 };
      this.holdings.set(account, held);
    }
    return held;
  }

  /** Drops a generation from every index and list, with the keyframe generated for it. */
  private evict(g: Generation): void {
    g.evicted = true;
    this.byId.delete(g.fate.id);
    this.order.remove(g);
    this.changes.remove(g);
    this.resolved.remove(g);
    const held = this.holdings.get(g.account);
    if (held) {
      held.list.remove(g);
      held.changeList.remove(g);
      const { fate } = g;
      if (fate.keyframeMode === 'generated' && fate.keyframeImageId !== null && held.images.get(fate.keyframeImageId)?.resolvedSlot === -1) {
        held.images.delete(fate.keyframeImageId);
      }
    }
    this.counted--;
  }

  /** Drops an image made by `POST /v1/images`. */
  private dropImage(image: Image): void {
    this.resolved.remove(image);
    const held = this.holdings.get(image.account);
    if (held?.images.get(image.id) === image) held.images.delete(image.id);
    this.counted--;
  }
}

function imageState(image: Image): ImageState {
  return { id: image.id, account: image.account, prompt: image.prompt, aspectRatio: image.aspectRatio };
}

const NO_IMAGES: ReadonlyMap<string, Image> = new Map();
