/** Transcripts read whole, for tests: `sim replay` reads a file line by line (`readTranscript`). */
import { readTranscript, type TranscriptEnd, type TranscriptHeader, type TranscriptLine } from '../src/transcript/lineFormat.js';

export interface Transcript {
  header: TranscriptHeader;
  lines: TranscriptLine[];
}

/** A transcript's whole text, its lines read at once, and how it ended. */
export function parseTranscript(text: string): Transcript & { truncated: number; end?: TranscriptEnd } {
  const reading = readTranscript(text.split('\n'));
  const lines = [...reading.lines];
  const { truncated, end } = reading.ending;
  return { header: reading.header, lines, truncated, ...(end && { end }) };
}
