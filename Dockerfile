# Dockerfile - wavedd in a container (docs/service.md).  Multi-stage on
# Debian 12: `build` compiles with the project's own .ci/deps.sh; `base`
# holds only the runtime libraries, the install and the user wavedd;
# `systemd` adds systemd as PID 1 with the installed unit enabled (a named
# target: tests/container/ builds it with --target systemd and runs it with
# podman --systemd=always); `runtime`, the last stage and so the default,
# runs wavedd as the non-root user wavedd on ipc, tcp 5555 with a token
# (generated at first start into /var/lib/wavedd/token unless one is
# mounted there; config/container.yaml) and metrics on 9464.
#
#   podman build --format docker -t wavedd .  # or: docker build -t wavedd .
#   (--format docker: podman's default OCI image format drops HEALTHCHECK)
#   podman run -d --name wavedd -p 5555:5555 -p 9464:9464 wavedd
#   podman exec wavedd cat /var/lib/wavedd/token > wavedd.token
#   WAVE_URL=tcp://127.0.0.1:5555 wavectl --token-file wavedd.token status
#
# The HEALTHCHECK is `wavectl status --probe` over the ipc socket inside:
# healthy once the daemon says it is ready, not merely once it answers.
# GPUs: NVIDIA through CDI (podman run --device nvidia.com/gpu=all) or the
# nodes (--device /dev/nvidia0 --device /dev/nvidiactl --device
# /dev/nvidia-uvm); Vulkan through --device /dev/dri; HIP through --device
# /dev/kfd --device /dev/dri.  The CUDA/HIP backends need their toolkits at
# build time (this image builds CPU + Vulkan); see docs/service.md.
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
COPY .ci/deps.sh /src/.ci/deps.sh
RUN bash /src/.ci/deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . /src
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX=/usr -DWAVE_VULKAN=ON \
      -DWAVE_TESTS=OFF -DWAVE_BENCH=OFF >/dev/null \
 && cmake --build /build -j "$(nproc)" \
 && DESTDIR=/stage cmake --install /build >/dev/null \
 && rm -rf /stage/usr/include /stage/usr/lib/cmake /stage/usr/lib/pkgconfig \
 && install -D -m 0644 /src/config/container.yaml /stage/etc/wavedd/container.yaml

# what both images share: the runtime libraries, the install, the user
FROM ${BASE} AS base
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libuv1 libnng1 libprotobuf-c1 libyaml-0-2 libsystemd0 libvulkan1 >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
 && (getent group render || groupadd --system render) \
 && useradd --system --user-group --groups render,video \
      --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin wavedd \
 && install -d -o root -g root -m 0775 /run/wavedd \
 && install -d -o root -g root -m 0770 /var/lib/wavedd
COPY --from=build /stage/ /

# systemd as PID 1, the installed unit enabled: a named target only
# (podman build --target systemd; tests: podman --systemd=always)
FROM base AS systemd
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      systemd >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
 && systemctl enable wavedd.service \
 && systemctl mask systemd-logind.service getty.target console-getty.service
STOPSIGNAL SIGRTMIN+3
CMD ["/lib/systemd/systemd"]

# the default image: last, so a plain `podman build .` / `docker build .`
# gives it
FROM base AS runtime
# Any uid in group 0 runs it too (OpenShift's arbitrary uid, `podman run
# --user 12345:0`): the two folders the daemon writes (made in `base`) are
# root's and group 0's, /var/lib/wavedd 0770 and /run/wavedd 0775 (others
# pass through it to the socket, whose own mode 0660 decides: clients of
# group wavedd), and the user wavedd is in group 0 as well, so both write
# them (the socket folder check takes a folder of root's:
# daemon/net/sockpath.c; the systemd image's unit makes its own /run/wavedd).
# Read-only root (--read-only, readOnlyRootFilesystem) with a mounted token:
# the daemon writes only its socket, in /run/wavedd; podman 4.3's tmpfs /run
# is a copy of the image's without the group's write bit, so add --tmpfs
# /run/wavedd:U (a tmpfs of the container's user).  contrib/kubernetes/ and
# contrib/compose/ listen on tcp only and write nothing at all.
# docs/service.md.
RUN usermod -a -G root wavedd
USER wavedd
ENV WAVE_URL=ipc:///run/wavedd/wavedd.sock
# big request buffers on transparent huge pages (docs/service.md, "Memory")
ENV GLIBC_TUNABLES=glibc.malloc.hugetlb=1
EXPOSE 5555 9464
# ready, not merely answering: status --probe exits 0 once the daemon says
# it is ready (StatusReply.ready, READY=1), 1 before, 3 when unreachable
HEALTHCHECK --interval=30s --timeout=10s --start-period=120s --retries=3 \
  CMD ["wavectl", "--timeout", "5000", "status", "--probe"]
STOPSIGNAL SIGTERM
CMD ["wavedd", "--config", "/etc/wavedd/container.yaml", "--foreground"]
