/**
 * A reader that stops reading (`sim openapi | head -1`) closes the pipe under the process's output;
 * the next write fails with EPIPE. A command that prints (`openapi`, `replay`, `report`, `drift`,
 * `scenarios`, `help`) then has no one to print for, and exits quietly with status 0 instead of an
 * unhandled-error stack trace. The server keeps serving: its output is only its start-up lines and
 * warnings, and its clients do not depend on them.
 */
let serving = false;

/** Called by the server: a closed stdout or stderr does not stop the process. */
export function keepServingWhenOutputCloses(): void {
  serving = true;
}

/** Installs the handler on stdout and stderr (once, before any command runs). */
export function exitQuietlyWhenOutputCloses(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EPIPE') throw e;
      if (!serving) process.exit(0);
    });
  }
}
