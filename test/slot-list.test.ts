/**
 * SlotList (src/core/paging.ts): the ordered lists of the store keep their order, their items'
 * slots and their keys through the batches that drop empty slots.
 */
import { describe, expect, it } from 'vitest';
import { SlotList } from '../src/core/paging.js';

interface Item {
  id: number;
  slot: number;
}

const slotField = { get: (item: Item) => item.slot, set: (item: Item, slot: number) => (item.slot = slot) };

function keyedList(n: number): { list: SlotList<Item>; items: Item[] } {
  const list = new SlotList<Item>(slotField, { keyed: true });
  const items = Array.from({ length: n }, (_, id) => ({ id, slot: -1 }));
  for (const item of items) list.push(item, item.id * 10);
  return { list, items };
}

describe('SlotList', () => {
  it('keeps order, slots and keys when the empty slots are dropped', () => {
    const { list, items } = keyedList(5000);
    // Remove every item but each third: the empty slots outnumber the items, so they are dropped.
    for (const item of items) if (item.id % 3 !== 0) list.remove(item);
    const kept = items.filter((item) => item.id % 3 === 0);
    expect(list.size).toBe(kept.length);
    expect(list.values().map((item) => item.id)).toEqual(kept.map((item) => item.id));
    expect(list.first()?.id).toBe(0);
    expect(list.last()?.id).toBe(4998);
    // Each kept item's slot is where it stands now (slots rise along the list), and removed items are in no slot.
    expect(kept.every((item) => list.page(item.slot, 1, () => true).data[0] === item)).toBe(true);
    expect(kept.every((item, i) => i === 0 || item.slot > kept[i - 1]!.slot)).toBe(true);
    expect(kept.at(-1)!.slot).toBeLessThan(2 * kept.length);
    expect(items.filter((item) => item.id % 3 !== 0).every((item) => item.slot === -1)).toBe(true);
    // Keys still find their items: the first key above 100 is item 12's (120).
    const start = list.afterKey(100);
    expect(list.page(start, 2, () => true)).toEqual({ data: [items[12], items[15]], hasMore: true, lastKey: 150 });
    expect(list.page(list.after(items[4998]!), 10, () => true)).toEqual({ data: [], hasMore: false, lastKey: -1 });
  });

  it('takes new items after a batch at the end, in order', () => {
    const { list, items } = keyedList(3000);
    for (const item of items.slice(0, 2500)) list.remove(item);
    const more = Array.from({ length: 3 }, (_, i) => ({ id: 3000 + i, slot: -1 }));
    for (const item of more) list.push(item, item.id * 10);
    expect(list.values().map((item) => item.id)).toEqual([...items.slice(2500), ...more].map((item) => item.id));
    expect(list.page(list.afterKey(29_990), 5, () => true).data.map((item) => item.id)).toEqual([3000, 3001, 3002]);
  });
});
