/**
 * A Testcontainers module: the simulator's container image, started for a test suite and stopped
 * after it, with a typed control client that carries the control token it set.
 *
 * ```ts
 * import { VideoSimContainer } from 'video-service-sim/testcontainers';
 * const sim = await new VideoSimContainer('video-service-sim:latest').withScenario('fast').withClock('manual').start();
 * // ... point the client under test at sim.baseUrl ...
 * await sim.control.clock.advance(30);
 * await sim.stop();
 * ```
 *
 * `testcontainers` (11 or 12) is an optional peer dependency: install it beside this package.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  AbstractStartedContainer,
  BoundPorts,
  GenericContainer,
  Wait,
  getContainerRuntimeClient,
  type InspectResult,
  type StartedTestContainer,
} from 'testcontainers';
import { controlPath } from './control-client/endpoints.js';
import { SimulatorControl } from './control-client/client.js';
import { controlTokenProblem } from './http/accessGuard.js';
import { hostInUrl } from './hostNames.js';

/** The port the image's simulator listens on. */
export const SIM_PORT = 8080;
/** The tag `VideoSimContainer` runs unless told another. */
export const DEFAULT_IMAGE = 'video-service-sim:latest';

/** Where `start()` writes the address the host reaches the simulator at, inside the container. */
const ADDRESS_FILE = '/tmp/sim-base-url';

/**
 * The container's entrypoint: waits for the address file, then runs the image's own command with
 * `SIM_BASE_URL` set to it (unless the container's environment sets one), node replacing the
 * shell as PID 1. The published port is only known once the container runs, so the simulator
 * starts then: every URL in its answers (`output.url`, `thumbnail_url`, an image's `url`) names
 * the address the test uses, never the container's own `localhost:8080`.
 */
const ENTRYPOINT = [
  'sh',
  '-c',
  `while [ ! -s ${ADDRESS_FILE} ]; do sleep 0.05; done; ` +
    `SIM_BASE_URL="\${SIM_BASE_URL:-$(cat ${ADDRESS_FILE})}"; export SIM_BASE_URL; exec node dist/cli.js "$@"`,
  'sim',
];

/** The simulator's image, with its settings; `start()` runs it. */
export class VideoSimContainer extends GenericContainer {
  private controlToken: string | undefined;

  /** @param image the image to run: a tag built from the repository's Dockerfile (see `build`), or any tag of it. */
  constructor(image: string = DEFAULT_IMAGE) {
    super(image);
    this.withExposedPorts(SIM_PORT)
      .withEntrypoint(ENTRYPOINT)
      .withWaitStrategy(Wait.forHttp(controlPath('simHealth'), SIM_PORT).forStatusCode(200))
      .withStartupTimeout(60_000);
  }

  /**
   * Builds the image from a Dockerfile (default: the repository's, when this package runs from a
   * clone of it) and answers a container of it. `tag` names the image (default
   * `video-service-sim:latest`); the image is kept after the tests, so that the next build reuses
   * its layers.
   */
  static async build(options: { context?: string; tag?: string } = {}): Promise<VideoSimContainer> {
    const context = options.context ?? repositoryRoot();
    if (!existsSync(`${context}/Dockerfile`)) {
      throw new Error(
        `VideoSimContainer.build: no Dockerfile in ${context}. Pass the context of a clone of the repository ({ context: '/path/to/clone' }), or run an image that exists with new VideoSimContainer(tag).`,
      );
    }
    const tag = options.tag ?? DEFAULT_IMAGE;
    await GenericContainer.fromDockerfile(context).build(tag, { deleteOnExit: false });
    return new VideoSimContainer(tag);
  }

  /** A bundled scenario by name (`fast`, `flaky`...), or the path of a scenario file inside the container. */
  withScenario(scenario: string): this {
    return this.withEnvironment({ SIM_SCENARIO: scenario });
  }

  /** A scenario file of the host, copied into the container and used. */
  withScenarioFile(hostPath: string): this {
    const target = '/app/scenarios-given/scenario.yaml';
    return this.withCopyFilesToContainer([{ source: hostPath, target }]).withEnvironment({ SIM_SCENARIO: target });
  }

  withSeed(seed: number): this {
    return this.withEnvironment({ SIM_SEED: String(seed) });
  }

  /** `manual` (time moves only through the control API) or `realtime` (times `speed`). */
  withClock(mode: 'manual' | 'realtime', speed?: number): this {
    return this.withEnvironment(speed === undefined ? { SIM_CLOCK: mode } : { SIM_CLOCK: mode, SIM_SPEED: String(speed) });
  }

  /**
   * The control token the simulator requires on `/_sim` (`--control-token`; printable ASCII, at
   * least 16 characters, else a RangeError). Default: a random one,
   * set for each start and carried by the started container's `control`.
   */
  withControlToken(token: string): this {
    const problem = controlTokenProblem(token);
    if (problem !== undefined) throw new RangeError(`withControlToken: the token ${problem}`);
    this.controlToken = token;
    return this;
  }

  /** Publishes the simulator on this host port, instead of a free one Docker picks. */
  withHostPort(port: number): this {
    return this.withExposedPorts({ container: SIM_PORT, host: port });
  }

  override async start(): Promise<StartedVideoSimContainer> {
    const token = this.controlToken ?? randomBytes(24).toString('base64url');
    this.withEnvironment({ SIM_CONTROL_TOKEN: token });
    return new StartedVideoSimContainer(await super.start(), token);
  }

  /**
   * The container runs and its port is published: the address the host reaches it at (the one
   * `baseUrl` names) goes into the address file, and the simulator starts with it.
   */
  protected override async containerStarting(inspectResult: InspectResult): Promise<void> {
    const client = await getContainerRuntimeClient();
    const port = BoundPorts.fromInspectResult(client.info.containerRuntime.hostIps, inspectResult).getBinding(SIM_PORT);
    const address = baseUrlOf(client.info.containerRuntime.host, port);
    const container = client.container.getById(inspectResult.name.replace(/^\//, ''));
    // Written whole, then renamed: the entrypoint never reads half an address.
    const written = await client.container.exec(container, ['sh', '-c', `printf '%s' "$0" > ${ADDRESS_FILE}.part && mv ${ADDRESS_FILE}.part ${ADDRESS_FILE}`, address]);
    if (written.exitCode !== 0) throw new Error(`VideoSimContainer: cannot write ${ADDRESS_FILE} in the container: ${written.output.trim()}`);
  }
}

/** A running simulator container. */
export class StartedVideoSimContainer extends AbstractStartedContainer {
  /**
   * The simulator's address from the host, `http://localhost:49153`: the address every URL in its
   * answers starts with (media under `/cdn`), unless `SIM_BASE_URL` or `SIM_CDN_URL` was set.
   */
  readonly baseUrl: string;
  /** Its control API, carrying the control token. */
  readonly control: SimulatorControl;

  constructor(
    started: StartedTestContainer,
    /** The control token the simulator requires on `/_sim`. */
    readonly controlToken: string,
  ) {
    super(started);
    this.baseUrl = baseUrlOf(started.getHost(), started.getMappedPort(SIM_PORT));
    this.control = new SimulatorControl({ baseUrl: this.baseUrl, token: controlToken });
  }
}

/** The simulator's address from the host: `http://HOST:PORT` (an IPv6 host in brackets). */
function baseUrlOf(host: string, port: number): string {
  return `http://${hostInUrl(host)}:${port}`;
}

/** The repository this module was built in (its `dist/` is one level down). */
function repositoryRoot(): string {
  return fileURLToPath(new URL('../', import.meta.url));
}
