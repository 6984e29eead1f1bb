/**
 * Where media files live: how a generation's or an image's id becomes the path and the URL of its
 * file, and how a file's name is read back into the id. The answers' URLs (`videoView`,
 * `imageView`), the media adapter's routes (`src/http/media.ts`) and the dashboard (through
 * `src/http/dashboard.ts`) all take the forms from here.
 *
 *   {cdn}/videos/{id}.mp4       a succeeded video
 *   {cdn}/thumbnails/{id}.png   its thumbnail
 *   {cdn}/images/{id}.png       an image (a video's keyframe still is one)
 *
 * `{cdn}` is the simulator's CDN address (`--cdn-url`): by default its base URL plus `MEDIA_ROOT`,
 * where the simulator serves the files.
 */

/** Where the simulator serves media files, below its base URL. */
export const MEDIA_ROOT = '/cdn';

export type MediaKind = 'video' | 'thumbnail' | 'image';

/** Each kind of file: the folder it is in and its extension, in the order messages list them. */
export const MEDIA_FILES: Readonly<Record<MediaKind, { readonly folder: string; readonly ext: string }>> = {
  video: { folder: 'videos', ext: '.mp4' },
  thumbnail: { folder: 'thumbnails', ext: '.png' },
  image: { folder: 'images', ext: '.png' },
};

/** Ids are plain tokens; anything else (dots, slashes, percent signs...) names no media file. */
const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** The CDN address when none is given: the base URL (trailing slashes aside) plus `MEDIA_ROOT`. */
export function defaultCdnUrl(baseUrl: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${MEDIA_ROOT}`;
}

/** A `Host` header's value as it may stand in a URL: a host name or address, and a port. */
const HOST_PATTERN = /^(?:[A-Za-z0-9_.-]{1,254}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;

/**
 * The media address of answers to a request that reached the simulator under `host` (its `Host`
 * header), when the simulator follows the Host it is reached under: `http://HOST/cdn`. Undefined
 * for a value that cannot stand in a URL (the answer then uses the simulator's own address).
 */
export function hostCdnUrl(host: string | undefined): string | undefined {
  return host !== undefined && HOST_PATTERN.test(host) ? `http://${host}${MEDIA_ROOT}` : undefined;
}

/** A file's name in its folder: `{id}.mp4`. */
export function mediaFileName(kind: MediaKind, id: string): string {
  return `${id}${MEDIA_FILES[kind].ext}`;
}

/** A file's path below the CDN address: `videos/{id}.mp4`. */
export function mediaFilePath(kind: MediaKind, id: string): string {
  return `${MEDIA_FILES[kind].folder}/${mediaFileName(kind, id)}`;
}

/**
 * The fields of the answers whose value is a media URL (`mediaUrl`): a video's `output.url` and
 * `output.thumbnail_url` (`videoView`), an image's `url` (`imageView`). No other field of an answer
 * is named so, and none of these holds anything else.
 */
export const MEDIA_URL_FIELDS = ['url', 'thumbnail_url'] as const;

/** The URL of a file on the CDN at `cdnUrl`: `{cdnUrl}/videos/{id}.mp4`. */
export function mediaUrl(cdnUrl: string, kind: MediaKind, id: string): string {
  return `${cdnUrl}/${mediaFilePath(kind, id)}`;
}

/** The id a file name of this kind names (`{id}.mp4` → id), or undefined when it is not of that form. */
export function mediaIdOf(kind: MediaKind, fileName: string | undefined): string | undefined {
  const { ext } = MEDIA_FILES[kind];
  if (fileName === undefined || !fileName.endsWith(ext)) return undefined;
  const id = fileName.slice(0, -ext.length);
  return ID_PATTERN.test(id) ? id : undefined;
}

/** The CDN address a URL of file `id` of this kind was written with, or undefined when it is no such URL. */
export function cdnUrlIn(url: string, kind: MediaKind, id: string): string | undefined {
  const tail = `/${mediaFilePath(kind, id)}`;
  return url.endsWith(tail) ? url.slice(0, -tail.length) : undefined;
}

/** Each media file's path below the CDN address, `{id}` standing for its id: `{ image: 'images/{id}.png', ... }`. */
export const MEDIA_FORMS: Readonly<Record<MediaKind, string>> = Object.fromEntries(
  (Object.keys(MEDIA_FILES) as MediaKind[]).map((kind) => [kind, mediaFilePath(kind, '{id}')]),
) as Record<MediaKind, string>;

/** Every form, as a message lists them: `/cdn/videos/{id}.mp4, /cdn/thumbnails/{id}.png and /cdn/images/{id}.png`. */
export function mediaUrlForms(): string {
  const forms = Object.values(MEDIA_FORMS).map((form) => `${MEDIA_ROOT}/${form}`);
  return `${forms.slice(0, -1).join(', ')} and ${forms.at(-1)}`;
}
