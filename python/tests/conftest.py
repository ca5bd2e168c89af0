"""conftest.py - real wavedd daemons for the Python package's tests.

WAVEDD_BUILD names the build tree (its wavedd, wavectl and
client/libwaveclient.so, the link that every soname has); WAVE_SOURCE_DIR
the source tree (packs, headers, docs).  ctest's python_test and
python_ctypes_test set both (tests/python.cmake), and WAVEDD_FFI (cffi,
ctypes) picks the backend; by hand:
    WAVEDD_BUILD=$PWD/build python3 -m pytest python/tests
    WAVEDD_FFI=ctypes WAVEDD_BUILD=$PWD/build python3 -m pytest python/tests
WAVEDD_TEST_VULKAN=1 adds a lavapipe device vk0 to the main daemon.

Fixtures:
  daemon   the main daemon: cpu0 (and vk0), regions allowed, at most 8
           regions a connection (so that a leak shows as a REGION
           refusal), max_job_rows 2^20, client_jobs 2;
  plain    a daemon without regions, with a tcp listener that asks for a
           token (the token's file in .token_file);
  client   a fresh wavedd.Client of the main daemon.

A run with a skipped test exits 77, ctest's "skipped", with one line
saying which and why (tests/skip.h); under WAVE_REQUIRE_ALL=1 (CI) it
fails instead, unless tests/skips.txt lists the entry (WAVE_TEST_NAME,
WAVE_SKIP_ALLOWED: tests/CMakeLists.txt).
"""
import os
import subprocess
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ.get("WAVE_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(HERE))
BUILD = os.environ.get("WAVEDD_BUILD") or os.path.join(SOURCE, "build")
WAVEDD = os.path.join(BUILD, "wavedd")
WAVECTL = os.path.join(BUILD, "wavectl")
LIB = os.path.join(BUILD, "client", "libwaveclient.so")
os.environ.setdefault("WAVEDD_LIBWAVECLIENT", LIB)

import wavedd  # noqa: E402  (after the library's path is set)


def pytest_sessionfinish(session, exitstatus):
    """Skips are said and counted (the module docstring)."""
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = rep.stats.get("skipped", []) if rep is not None else []
    if exitstatus != 0 or not skipped:
        return
    why = sorted({f"{r.nodeid}: {r.longrepr[2]}"
                  if isinstance(r.longrepr, tuple) else r.nodeid
                  for r in skipped})
    name = os.environ.get("WAVE_TEST_NAME") or "python/tests"
    allowed = os.environ.get("WAVE_SKIP_ALLOWED")
    if os.environ.get("WAVE_REQUIRE_ALL") == "1" and not allowed:
        print(f"\nFAIL {name}: skipped ({'; '.join(why)}), and "
              "WAVE_REQUIRE_ALL=1: tests/skips.txt does not list it")
        session.exitstatus = 1
    else:
        print(f"\nSKIP {name}: {'; '.join(why)}")
        session.exitstatus = 77

MAX_ROWS = 1 << 20


def child_env(**extra):
    """The environment of a daemon or wavectl we start: in the ASan build
    (tests/python.cmake) without the preload this interpreter needs, with
    the strict ASAN_OPTIONS."""
    env = dict(os.environ, **extra)
    strict = env.pop("WAVEDD_CHILD_ASAN_OPTIONS", None)
    if strict is not None:
        env.pop("LD_PRELOAD", None)
        env["ASAN_OPTIONS"] = strict
    return env
MAX_REGIONS = 8


class Daemon:
    def __init__(self, tmp, name, body):
        self.dir = tmp
        self.sock = os.path.join(tmp, name + ".sock")
        self.url = "ipc://" + self.sock
        self.cfg = os.path.join(tmp, name + ".yaml")
        self.logpath = os.path.join(tmp, name + ".log")
        with open(self.cfg, "w") as f:
            f.write(f"listen:\n  - {self.url}\n{body}")
        self.log = open(self.logpath, "w")
        self.proc = subprocess.Popen([WAVEDD, "--config", self.cfg,
                                      "--foreground"], stderr=self.log,
                                     env=child_env())
        # bounded wait, only to catch a daemon that never gets ready
        for _ in range(600):
            if self.proc.poll() is not None:
                break
            try:
                with wavedd.Client(self.url, timeout=5) as c:
                    if c.status()["ready"]:
                        return
            except wavedd.Error:
                pass
            time.sleep(0.1)
        self.stop()
        with open(self.logpath) as f:
            raise RuntimeError(f"wavedd {name} did not get ready: {f.read()}")

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def wavectl(self, *args, check=True):
        env = child_env(WAVE_URL=self.url)
        p = subprocess.run([WAVECTL, *args], env=env, capture_output=True,
                           text=True)
        if check and p.returncode != 0:
            raise AssertionError(f"wavectl {' '.join(args)}: exit "
                                 f"{p.returncode}: {p.stderr}")
        return p

    def memfd_maps(self, name="python"):
        """The daemon's mappings of our regions (memfd:NAME)."""
        with open(f"/proc/{self.pid}/maps") as f:
            return sum(1 for line in f if f"/memfd:{name}" in line)


def _devices():
    devs = "devices:\n  - {name: cpu0, backend: cpu, threads: 2}\n"
    if os.environ.get("WAVEDD_TEST_VULKAN") == "1":
        devs += "  - {name: vk0, backend: vulkan}\n"
    return devs


@pytest.fixture(scope="session")
def tmpdir_session():
    with tempfile.TemporaryDirectory(prefix="wvpy-") as d:
        yield d


@pytest.fixture(scope="session")
def daemon(tmpdir_session):
    d = Daemon(tmpdir_session, "main", f"""auth: none
allow_client_shm: true
log_level: info
limits:
  max_client_regions: {MAX_REGIONS}
  max_job_rows: {MAX_ROWS}
  client_jobs: 2
packs:
  dir: {SOURCE}/config/packs
  load: [small]
{_devices()}""")
    yield d
    rc = d.stop()
    assert rc == 0, f"wavedd exited {rc}"


@pytest.fixture(scope="session")
def plain(tmpdir_session):
    tok = os.path.join(tmpdir_session, "client.token")
    fd = os.open(tok, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"python-test-token-0123456789\n")
    os.close(fd)
    d = Daemon(tmpdir_session, "plain", f"""  - tcp://127.0.0.1:0
allow_client_shm: false
auth:
  tokens:
    - {{name: client, file: {tok}}}
packs:
  dir: {SOURCE}/config/packs
  load: [small]
devices:
  - {{name: cpu0, backend: cpu, threads: 1}}
""")
    d.token_file = tok
    with wavedd.Client(d.url) as c:
        d.tcp = [u for u in c.status()["listen"] if u.startswith("tcp://")][0]
    yield d
    assert d.stop() == 0


@pytest.fixture
def client(daemon):
    with wavedd.Client(daemon.url) as c:
        yield c


def device_names(daemon):
    with wavedd.Client(daemon.url) as c:
        return [d["name"] for d in c.status()["devices"]]
