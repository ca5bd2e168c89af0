#!/usr/bin/env python3
"""fair-where.py - where a light sum's slowest waits went, in a bench_fair
--chunks log run with --slow-log MS (bench/device-fair.sh).

The bench prints each slowest wait with the CLOCK_MONOTONIC time it was
sent; the daemon's slow request log (limits.slow_request_ms) gives, for
each request slower than MS, when nng handed it over (the same clock) and
its time in each stage.  A wait is matched to the light request (tcp:
"from pipe:") nng handed over after it was sent and before it ended, so
it splits into the time before nng handed it over (the kernel and nng)
and the daemon's stages.  A wait with no match spent less than MS in the
daemon: the rest went before nng handed it over, or on the reply's way
back to the bench.

    fair-where.py LOG [TOP]      (default 3)
"""
import re
import sys

SLOWEST = re.compile(r'^slowest (\d+): ([0-9.]+) us .*sent at \+([0-9.]+) s'
                     r'.*CLOCK_MONOTONIC ([0-9.]+) s\)')
SLOW = re.compile(r'slow request: \S+ \d+ from pipe:\S+ on connection \d+ '
                  r'took ([0-9.]+) ms \(limits.slow_request_ms (\d+)\): '
                  r'(\S+) ms waiting for a decode thread, (\S+) decoding, '
                  r'(\S+) waiting for the loop, (\S+) served until its reply'
                  r'.* handed it over at ([0-9.]+) s')
# the serve stage's split, when the request had a reduction
SPLIT = re.compile(r'\(of it: (\S+) before its job was queued, (\S+) queued '
                   r'on the device, (\S+) there, (\S+) until the loop took '
                   r'its end, (\S+) from then to its reply\)')


def main():
    log = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    waits, slow, ms = [], [], None
    with open(log, errors='replace') as f:
        for line in f:
            m = SLOWEST.search(line)
            if m:
                waits.append((int(m[1]), float(m[2]), float(m[3]),
                              float(m[4])))
                continue
            m = SLOW.search(line)
            if m:
                ms = m[2]
                sp = SPLIT.search(line)
                slow.append((float(m[7]), float(m[1]), m[3], m[4], m[5],
                             m[6], sp.groups() if sp else None))
    for k, wait_us, rel, sent in waits[:top]:
        end = sent + wait_us * 1e-6
        hit = [s for s in slow if sent <= s[0] <= end]
        if not hit:
            print(f'  slowest {k}: {wait_us / 1e3:.1f} ms at +{rel:.3f} s: '
                  f'under {ms or "?"} ms in the daemon (the rest before nng '
                  f'handed it over, or on the way back)')
            continue
        at, took, pool, dec, loop, served, sp = hit[0]
        split = ''
        if sp:
            split = (f': before the job {sp[0]}, device queue {sp[1]}, '
                     f'on the device {sp[2]}, to the loop {sp[3]}, '
                     f'reply {sp[4]}')
        print(f'  slowest {k}: {wait_us / 1e3:.1f} ms at +{rel:.3f} s: '
              f'{(at - sent) * 1e3:.1f} ms before nng handed it over, '
              f'{took:.1f} in the daemon (decode thread {pool}, decode '
              f'{dec}, loop {loop}, served {served}{split})')


if __name__ == '__main__':
    main()
