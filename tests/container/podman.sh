# tests/container/podman.sh - sourced by the container and README tests:
# podman as this host needs it, set through a containers.conf of our own
# (CONTAINERS_CONF), so that commands copied from README.md run unchanged.
#  * podman 4.3 here: runc (crun is not installed), and ulimits within the
#    host's hard limits (podman's default nofile of 1048576 is refused);
#  * pm: podman, without its complaint that there is no systemd to time the
#    HEALTHCHECK (the tests run the HEALTHCHECK by hand: podman healthcheck
#    run, and --health-interval disable where they start containers).
# Sets $podman_conf (a folder: remove it at exit).
podman_conf=$(mktemp -d /var/tmp/wavedd-conf.XXXXXX)
cat >"$podman_conf/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
CONF
export CONTAINERS_CONF=$podman_conf/containers.conf
pm() { podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2); }
