/**
 * Just enough of the MP4 format to check a downloaded file: its top-level boxes, the major brand
 * of `ftyp`, the duration of `moov/mvhd`, and the picture size of the video track's `tkhd`.
 */
export interface Mp4Summary {
  boxes: string[];
  majorBrand: string;
  durationSeconds: number;
  width: number;
  height: number;
}

function* boxes(bytes: Uint8Array, start: number, end: number): Generator<{ type: string; body: number; end: number }> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = start; at + 8 <= end; ) {
    let size = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    let body = at + 8;
    if (size === 1) {
      size = Number(view.getBigUint64(at + 8));
      body = at + 16;
    } else if (size === 0) size = end - at;
    if (size < 8 || at + size > end) throw new Error(`box ${type} at ${at} runs past the end`);
    yield { type, body, end: at + size };
    at += size;
  }
}

export function readMp4(bytes: Uint8Array): Mp4Summary {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const top = [...boxes(bytes, 0, bytes.length)];
  const ftyp = top[0];
  if (ftyp?.type !== 'ftyp') throw new Error('not an MP4: the first box is not ftyp');
  const moov = top.find((b) => b.type === 'moov');
  if (!moov) throw new Error('no moov box');
  let durationSeconds = NaN;
  let width = 0;
  let height = 0;
  for (const box of boxes(bytes, moov.body, moov.end)) {
    if (box.type === 'mvhd') {
      const v1 = bytes[box.body] === 1;
      const timescale = view.getUint32(box.body + (v1 ? 20 : 12));
      const duration = v1 ? Number(view.getBigUint64(box.body + 24)) : view.getUint32(box.body + 16);
      durationSeconds = duration / timescale;
    }
    if (box.type === 'trak') {
      const tkhd = [...boxes(bytes, box.body, box.end)].find((b) => b.type === 'tkhd');
      if (tkhd) {
        // width and height are 16.16 fixed point, the last 8 bytes of tkhd.
        const w = view.getUint32(tkhd.end - 8) / 65536;
        const h = view.getUint32(tkhd.end - 4) / 65536;
        if (w > 0 && h > 0) [width, height] = [w, h];
      }
    }
  }
  return { boxes: top.map((b) => b.type), majorBrand: String.fromCharCode(...bytes.subarray(ftyp.body, ftyp.body + 4)), durationSeconds, width, height };
}
