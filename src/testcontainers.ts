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
import { AbstractStartedContainer, GenericContainer, Wait, type StartedTestContainer } from 'testcontainers';
import { SimulatorControl } from './control/client.js';
import { controlTokenProblem } from './http/controlGuard.js';

/** The port the image's simulator listens on. */
export const SIM_PORT = 8080;
/** The tag `VideoSimContainer` runs unless told another. */
export const DEFAULT_IMAGE = 'video-service-sim:latest';

/** The simulator's image, with its settings; `start()` runs it. */
export class VideoSimContainer extends GenericContainer {
  private controlToken: string | undefined;
  private hostPort: number | undefined;

  /** @param image the image to run: a tag built from the repository's Dockerfile (see `build`), or any tag of it. */
  constructor(image: string = DEFAULT_IMAGE) {
    super(image);
    this.withExposedPorts(SIM_PORT)
      .withWaitStrategy(Wait.forHttp('/_sim/health', SIM_PORT).forStatusCode(200))
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

  /**
   * Publishes the simulator on this host port (instead of a free one Docker picks) and writes the
   * matching address into answers (`SIM_BASE_URL`), so that media URLs (`output.url`) work from the
   * host. Without it, answers name the container's own address, `http://localhost:8080`.
   */
  withHostPort(port: number): this {
    this.hostPort = port;
    return this.withExposedPorts({ container: SIM_PORT, host: port });
  }

  override async start(): Promise<StartedVideoSimContainer> {
    const token = this.controlToken ?? randomBytes(24).toString('base64url');
    this.withEnvironment({ SIM_CONTROL_TOKEN: token });
    if (this.hostPort !== undefined) this.withEnvironment({ SIM_BASE_URL: `http://localhost:${this.hostPort}` });
    return new StartedVideoSimContainer(await super.start(), token);
  }
}

/** A running simulator container. */
export class StartedVideoSimContainer extends AbstractStartedContainer {
  /** The simulator's address from the host, `http://localhost:49153`. */
  readonly baseUrl: string;
  /** Its control API, carrying the control token. */
  readonly control: SimulatorControl;

  constructor(
    started: StartedTestContainer,
    /** The control token the simulator requires on `/_sim`. */
    readonly controlToken: string,
  ) {
    super(started);
    this.baseUrl = `http://${started.getHost()}:${started.getMappedPort(SIM_PORT)}`;
    this.control = new SimulatorControl({ baseUrl: this.baseUrl, token: controlToken });
  }
}

/** The repository this module was built in (its `dist/` is one level down). */
function repositoryRoot(): string {
  return fileURLToPath(new URL('../', import.meta.url));
}
