# Dockerfile - wavedd in a container (docs/service.md).  Multi-stage on
# Debian 12: `build` compiles with the project's own .ci/deps.sh, `runtime`
# holds only the runtime libraries and runs wavedd as the non-root user
# wavedd; `systemd` adds systemd as PID 1 with the installed unit enabled
# (tests/container/ runs it with podman --systemd=always).
#
#   podman build --format docker -t wavedd .  # or: docker build -t wavedd .
#   (--format docker: the OCI image format drops HEALTHCHECK)
#   podman run -d -p 5555:5555 -p 9464:9464 wavedd
#   WAVE_URL=tcp://127.0.0.1:5555 wavectl status
#
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

FROM ${BASE} AS runtime
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libuv1 libnng1 libprotobuf-c1 libyaml-0-2 libsystemd0 libvulkan1 >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
 && (getent group render || groupadd --system render) \
 && useradd --system --user-group --groups render,video \
      --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin wavedd \
 && install -d -o wavedd -g wavedd -m 0750 /run/wavedd
COPY --from=build /stage/ /
USER wavedd
ENV WAVE_URL=ipc:///run/wavedd/wavedd.sock
EXPOSE 5555 9464
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
  CMD ["wavectl", "--timeout", "5000", "status"]
STOPSIGNAL SIGTERM
CMD ["wavedd", "--config", "/etc/wavedd/container.yaml", "--foreground"]

# systemd as PID 1, the installed unit enabled (tests: podman --systemd=always)
FROM runtime AS systemd
USER root
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      systemd >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb \
 && systemctl enable wavedd.service \
 && systemctl mask systemd-logind.service getty.target console-getty.service
STOPSIGNAL SIGRTMIN+3
HEALTHCHECK NONE
CMD ["/lib/systemd/systemd"]
