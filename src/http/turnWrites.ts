/**
 * Answers written together at the end of an event-loop turn.
 *
 * Under load, one turn of the event loop reads the requests of many connections. Written one by
 * one as each is answered, every answer wakes its client again: the client has handled the last
 * one and gone back to waiting by the time the next is written, and waking a waiting process costs
 * both sides, most of all on a virtual machine (a CPU that went idle is woken through the host).
 * Written together once the turn's reads are handled, a turn's answers wake the client once. On
 * 2 CPUs under 32 connections this took a third off the server's CPU time per create, and up to a
 * quarter off a poll's (bench/README.md, "Answers written per turn").
 *
 * The turn ends with a message on a `MessageChannel`, not `setImmediate`: test runners' fake
 * timers fake `setImmediate` (vitest's and @sinonjs/fake-timers' by default), and a simulator in
 * the test's process must answer whatever the test does with its timers.
 *
 * A client that half-closes its connection once its request is sent (`nc -N`, `shutdown(SHUT_WR)`)
 * has Node's HTTP server end the socket as soon as the end is read, which may be within the turn:
 * the turn's answers are written then, before the socket is ended, as they would have been had
 * they been written at once.
 */
import type { Socket } from 'node:net';
import { MessageChannel, type MessagePort } from 'node:worker_threads';

/** The writes of this turn, in the order they were asked for. */
let pending: (() => void)[] = [];
let wake: MessagePort | undefined;

/**
 * Runs `write` once the event loop has handled the I/O of this turn, with every other write asked
 * for in it, in the order asked; at once when `socket` (the answer's) is ended by its client
 * meanwhile. `write` catches its own errors; one that throws anyway does not keep the others from
 * running, and is thrown once they have.
 */
export function writeAtEndOfTurn(write: () => void, socket?: Socket | null): void {
  if (socket && !watched.has(socket)) {
    watched.add(socket);
    // Before the server's own listener, which ends the socket.
    socket.prependListener('end', writePending);
  }
  pending.push(write);
  if (pending.length === 1) (wake ??= openChannel()).postMessage(null);
}

/** The sockets whose end (the client half-closed) writes the turn's answers at once. */
const watched = new WeakSet<Socket>();

function openChannel(): MessagePort {
  const { port1, port2 } = new MessageChannel();
  port1.on('message', writePending);
  // The channel alone keeps no process alive: a write is only ever asked for by an answer, whose
  // connection does.
  port1.unref();
  return port2;
}

function writePending(): void {
  const writes = pending;
  pending = [];
  let failed: { error: unknown } | undefined;
  for (const write of writes) {
    try {
      write();
    } catch (error) {
      failed ??= { error };
    }
  }
  if (failed) throw failed.error;
}
