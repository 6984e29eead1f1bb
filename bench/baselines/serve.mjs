// Shared by the bench's baseline servers: the port from `--port N` (else PORT; 0 picks a free
// one), and `serve`, which listens on 127.0.0.1, prints the `listening on http://127.0.0.1:PORT
// (label)` line the bench waits for, and closes on SIGTERM or SIGINT, as the simulator does.
const argPort = process.argv.indexOf('--port');
export const port = argPort >= 0 ? Number(process.argv[argPort + 1]) : Number(process.env.PORT ?? 0);

/** @param {import('node:http').Server} server */
export function serve(server, label) {
  server.listen(port, '127.0.0.1', () => {
    process.stdout.write(`listening on http://127.0.0.1:${server.address().port} (${label})\n`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
    setTimeout(() => process.exit(0), 500).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return server;
}
